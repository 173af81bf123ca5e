package config

import (
	"slices"
	"testing"
	"time"
)

// TestListCacheTTL (issue 31, item 17): listCacheTTL sets how long a 2026-07-28 client may keep a list; a
// minute by default, 0 turns it off, and it is bounded.
func TestListCacheTTL(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		errs []string
	}{
		{"", DefaultListCacheTTL, nil},
		{"listCacheTTL: 5m\n", 5 * time.Minute, nil},
		{"listCacheTTL: 1500ms\n", 1500 * time.Millisecond, nil},
		{"listCacheTTL: 0\n", 0, nil},
		{"listCacheTTL: 0s\n", 0, nil},
		{"listCacheTTL: 24h\n", 24 * time.Hour, nil},
		{"listCacheTTL: 25h\n", 0, []string{`c.yaml:1:15: listCacheTTL: 25h0m0s is longer than 24h0m0s; lists change, and a client should ask again at least daily`}},
		{"listCacheTTL: -1s\n", 0, []string{`c.yaml:1:15: listCacheTTL: must be greater than zero, not "-1s"`}},
		{"listCacheTTL: 60\n", 0, []string{`c.yaml:1:15: listCacheTTL: 60 has no unit; write a duration such as "60s" (units: ms, s, m, h)`}},
		{"listCacheTTL: soon\n", 0, []string{`c.yaml:1:15: listCacheTTL: "soon" is not a duration; write a number with a unit, such as "60s", "10m" or "1h30m"`}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tc.line+"upstreams:\n  - name: a\n    command: a-server\n"), nil)
			if tc.errs != nil {
				if got := problemLines(t, err); !slices.Equal(got, tc.errs) {
					t.Errorf("problems %q, want %q", got, tc.errs)
				}
				return
			}
			if err != nil || cfg.ListCacheTTL != tc.want {
				t.Errorf("listCacheTTL %v (%v), want %v", cfg.ListCacheTTL, err, tc.want)
			}
		})
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway/console"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestConsolePagesWho: the console is mounted for a loopback gateway without auth, and refused at the start where
// nobody could be told an admin.
func TestConsolePagesWho(t *testing.T) {
	for _, tc := range []struct {
		name, listen string
		auth         *config.Auth
		want         string // "" mounts
	}{
		{"loopback without auth", "127.0.0.1:8080", nil, ""},
		{"network without auth", ":8080", nil, "without auth"},
		{"auth without the browser sign-in", "127.0.0.1:8080", &config.Auth{Issuer: "https://idp.example"}, "browser sign-in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Listen: tc.listen, Auth: tc.auth}
			h, paths, err := consolePages(cfg, &consoleSource{}, nil, false, nil, nil, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
				if h == nil || strings.Join(paths, " ") != "/console /console/*" {
					t.Errorf("mounted at %q", paths)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Errorf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestReloadResultOf: a reload's outcome as the config page shows it, a refused file's problems where they are.
func TestReloadResultOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	probs := &config.Problems{List: []config.Problem{{File: "sb.yaml", Line: 5, Col: 12, Path: "upstreams[0].session", Message: `"x" is not a session mode`}}}
	for _, tc := range []struct {
		name string
		res  routing.ReloadResult
		err  error
		want console.ReloadResult
	}{
		{"applied", routing.ReloadResult{Added: []string{"a"}, Kept: []string{"b", "c"}, RestartNeeded: []string{"listen"}}, nil,
			console.ReloadResult{At: at, OK: true, Summary: "Applied: 1 upstream added, 2 upstreams kept. These changes take effect after a restart: listen."}},
		{"applied with a problem", routing.ReloadResult{Kept: []string{"a"}, Problems: []string{"pinning.lockFile x: gone"}}, nil,
			console.ReloadResult{At: at, OK: true, Summary: "Applied: 1 upstream kept.", Problems: []console.Problem{{Message: "pinning.lockFile x: gone"}}}},
		{"refused file", routing.ReloadResult{}, errors.Join(errors.New("config rejected"), probs),
			console.ReloadResult{At: at, Summary: "The file was refused; the running configuration stays.",
				Problems: []console.Problem{{File: "sb.yaml", Line: 5, Col: 12, Message: `upstreams[0].session: "x" is not a session mode`}}}},
		{"refused otherwise", routing.ReloadResult{}, errors.New("enables no upstream"),
			console.ReloadResult{At: at, Summary: "Refused; the running configuration stays: enables no upstream"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reloadResultOf(tc.res, tc.err, at)
			if got.OK != tc.want.OK || got.Summary != tc.want.Summary || len(got.Problems) != len(tc.want.Problems) {
				t.Fatalf("got %+v\nwant %+v", *got, tc.want)
			}
			for i := range got.Problems {
				if got.Problems[i] != tc.want.Problems[i] {
					t.Errorf("problem %d: %+v, want %+v", i, got.Problems[i], tc.want.Problems[i])
				}
			}
		})
	}
}

// TestQuantile: the latencies of the overview, interpolated within a bucket as histogram_quantile does.
func TestQuantile(t *testing.T) {
	bounds := []float64{0.005, 0.01, 0.05, 0.1}
	for _, tc := range []struct {
		name string
		cum  []uint64
		q    float64
		want time.Duration
	}{
		{"all in the first bucket", []uint64{10, 10, 10, 10}, 0.5, 2500 * time.Microsecond},
		{"median in the second", []uint64{2, 8, 10, 10}, 0.5, 5*time.Millisecond + 5*time.Millisecond/2},
		{"p99 in the last bucket", []uint64{0, 0, 0, 10}, 0.99, 99500 * time.Microsecond},
		{"past every bound", []uint64{0, 0, 0, 0}, 0.5, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := quantile(bounds, tc.cum, 10, tc.q)
			if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("quantile = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCallHistogramSince: the figures are the difference from the baseline.
func TestCallHistogramSince(t *testing.T) {
	bounds := []float64{0.01, 0.1}
	earlier := callHistogram{count: 10, errors: 1, bounds: bounds, buckets: []uint64{10, 10}}
	now := callHistogram{count: 30, errors: 6, bounds: bounds, buckets: []uint64{10, 30}}
	f := now.since(earlier, 2*time.Minute)
	if f.calls != 20 || f.perMinute != 10 || f.errorRate != 0.25 {
		t.Errorf("since = %+v; want 20 calls, 10/min, 25%% errors", f)
	}
	if f.p50 <= 10*time.Millisecond || f.p50 > 100*time.Millisecond {
		t.Errorf("p50 = %v; every new call was in the second bucket", f.p50)
	}
	if none := earlier.since(earlier, time.Minute); none.calls != 0 || none.perMinute != 0 {
		t.Errorf("no new call: %+v", none)
	}
}

// TestOriginOf: where an exposed tool comes from, through an override or the upstream's prefix.
func TestOriginOf(t *testing.T) {
	cfg := &config.Config{
		Upstreams: []config.Upstream{{Name: "files", Prefix: "files__"}, {Name: "plain", Prefix: ""}},
		Overrides: map[config.OverrideKey]config.Override{
			{Upstream: "files", Kind: config.OverrideTool, Name: "list_directory"}: {Name: "list_shared", Arguments: map[string]json.RawMessage{"path": json.RawMessage(`"/tmp"`)}},
			{Upstream: "files", Kind: config.OverrideTool, Name: "stat"}:           {Description: "Stats."},
		},
	}
	listed := map[string]pin.Locked{
		"files": {Tools: map[string]string{"list_directory": "h1", "read_file": "h2", "stat": "h3"}},
		"plain": {Tools: map[string]string{"echo": "h4"}, Prompts: map[string]string{"greet": "h5"}},
	}
	for _, tc := range []struct{ kind, exposed, up, orig, override string }{
		{"tool", "list_shared", "files", "list_directory", "files/list_directory (renamed; preset path)"},
		{"tool", "files__stat", "files", "stat", "files/stat (described)"},
		{"tool", "files__read_file", "files", "read_file", ""},
		{"tool", "echo", "plain", "echo", ""},
		{"prompt", "greet", "plain", "greet", ""},
		{"tool", "search_tools", "", "", ""},
	} {
		up, orig, override := originOf(cfg, listed, tc.kind, tc.exposed)
		if up != tc.up || orig != tc.orig || override != tc.override {
			t.Errorf("originOf(%s %s) = %q %q %q, want %q %q %q", tc.kind, tc.exposed, up, orig, override, tc.up, tc.orig, tc.override)
		}
	}
}

// TestAuditLogLatest: the audit page's events read back from a log, newest first and filtered; the lines that are
// not audit records skipped; the chain verified as `switchboard audit verify` does.
func TestAuditLogLatest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.log")
	lines := []string{
		`{"time":"2026-12-01T12:00:00Z","level":"INFO","msg":"switchboard listening"}`,
		`{"time":"2026-12-01T12:00:01Z","level":"INFO","msg":"audit","sub":"alice","upstream":"gh","method":"tools/call","tool":"gh__create_issue","outcome":"ok","duration_ms":12.5}`,
		`{"time":"2026-12-01T12:00:02Z","level":"WARN","msg":"audit","sub":"bob","endpoint":"team","upstream":"gh","method":"tools/call","tool":"gh__delete_repo","outcome":"denied","reason":"policy","duration_ms":0}`,
		`{"time":"2026-12-01T12:00:03Z","level":"WARN","msg":"audit","upstream":"gh","kind":"tool","name":"create_issue","outcome":"definition_withheld","action":"withheld"}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &auditLog{path: path}
	all, err := a.latest(console.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Method != "pin tool" || all[0].Outcome != "withheld" || all[2].Person != "alice" || all[2].Duration != 12500*time.Microsecond {
		t.Errorf("latest = %+v", all)
	}
	for _, tc := range []struct {
		f    console.AuditFilter
		want int
	}{
		{console.AuditFilter{Person: "BOB"}, 1},
		{console.AuditFilter{Tool: "create"}, 2},
		{console.AuditFilter{Outcome: "denied"}, 1},
		{console.AuditFilter{Endpoint: "team"}, 1},
		{console.AuditFilter{Limit: 1}, 1},
	} {
		if got, _ := a.latest(tc.f); len(got) != tc.want {
			t.Errorf("latest(%+v) = %d events, want %d", tc.f, len(got), tc.want)
		}
	}
	// These records have no chain: nothing verified, and the page says so.
	cs := a.verify(time.Now())
	if cs.Checked || cs.Streams != 0 || !strings.Contains(cs.Detail, "holds no chained audit records") {
		t.Errorf("verify = %+v", cs)
	}
	if _, err := (&auditLog{path: filepath.Join(t.TempDir(), "missing")}).latest(console.AuditFilter{}); err == nil {
		t.Error("a missing log read without an error")
	}
}

// TestConsoleReplicas: with a shared store the overview lists the live replicas the store knows, when each last
// registered, and none whose registration lapsed.
func TestConsoleReplicas(t *testing.T) {
	r, err := routing.New(routing.Options{Replica: "http://10.0.0.1:8080"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := state.NewMemory()
	t.Cleanup(store.Shutdown)
	ctx := context.Background()
	for url, ttl := range map[string]time.Duration{"http://10.0.0.1:8080": time.Minute, "http://10.0.0.2:8080": time.Minute, "http://10.0.0.3:8080": time.Nanosecond} {
		if err := store.RegisterReplica(ctx, url, ttl); err != nil {
			t.Fatal(err)
		}
	}
	src := &consoleSource{router: r, replicas: store, metrics: newRecentMetrics(http.NotFoundHandler(), consoleWindow, time.Now)}
	ov, err := src.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rep := range ov.Replicas {
		if rep.LastSeen.IsZero() {
			t.Errorf("%s: no last-seen time", rep.ID)
		}
		got = append(got, rep.ID)
	}
	if want := []string{"http://10.0.0.1:8080", "http://10.0.0.2:8080"}; !slices.Equal(got, want) || ov.Replica != want[0] {
		t.Errorf("replicas %v (this one %q), want %v", got, ov.Replica, want)
	}
}

package routing

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// strictRE is the tool-name form the big clients enforce (design §5).
var strictRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedName(t *testing.T) {
	long64 := strings.Repeat("a", 64)
	long65 := strings.Repeat("a", 65)
	tests := []struct {
		name         string
		prefix, item string
		want         string // exact result; "" when only the shape is checked
		wantPrefix   string // the sanitised part before the hash suffix, when want is ""
	}{
		{name: "strict kept", prefix: "fs__", item: "read_file", want: "fs__read_file"},
		{name: "empty prefix kept", prefix: "", item: "search-web", want: "search-web"},
		{name: "exactly 64 kept", prefix: "", item: long64, want: long64},
		{name: "prefix makes it 64", prefix: "p__", item: strings.Repeat("b", 61), want: "p__" + strings.Repeat("b", 61)},
		{name: "dot", prefix: "m__", item: "math.add", wantPrefix: "m__math_add_"},
		{name: "space", prefix: "", item: "do it", wantPrefix: "do_it_"},
		{name: "unicode", prefix: "", item: "héllo", wantPrefix: "h__llo_"},
		{name: "dot in prefix", prefix: "my.srv__", item: "x", wantPrefix: "my_srv__x_"},
		{name: "65 chars", prefix: "", item: long65, wantPrefix: strings.Repeat("a", 55) + "_"},
		{name: "prefix pushes past 64", prefix: "pp__", item: strings.Repeat("c", 61), wantPrefix: "pp__" + strings.Repeat("c", 51) + "_"},
		{name: "long with bad chars", prefix: "", item: strings.Repeat("a.", 50), wantPrefix: strings.Repeat("a_", 27) + "a_"},
		{name: "empty", prefix: "", item: "", wantPrefix: "_"},
		{name: "slash and colon", prefix: "", item: "ns/tool:v1", wantPrefix: "ns_tool_v1_"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := exposedName(tc.prefix, tc.item, maxName)
			if !strictRE.MatchString(got) {
				t.Fatalf("exposedName(%q, %q) = %q: not ^[a-zA-Z0-9_-]{1,64}$", tc.prefix, tc.item, got)
			}
			if again := exposedName(tc.prefix, tc.item, maxName); again != got {
				t.Fatalf("not deterministic: %q then %q", got, again)
			}
			if tc.want != "" {
				if got != tc.want {
					t.Fatalf("exposedName(%q, %q) = %q, want %q", tc.prefix, tc.item, got, tc.want)
				}
				return
			}
			// Sanitised: <sanitised, truncated><"_"><8 hex digits>.
			if !strings.HasPrefix(got, tc.wantPrefix) {
				t.Fatalf("exposedName(%q, %q) = %q, want prefix %q", tc.prefix, tc.item, got, tc.wantPrefix)
			}
			suffix := got[len(got)-9:]
			if !regexp.MustCompile(`^_[0-9a-f]{8}$`).MatchString(suffix) {
				t.Fatalf("exposedName(%q, %q) = %q: no _<8 hex> hash suffix", tc.prefix, tc.item, got)
			}
			if len(tc.prefix+tc.item) > 64 && len(got) != 64 {
				t.Fatalf("long name shortened to %d chars, want exactly 64 (%q)", len(got), got)
			}
		})
	}
}

// TestExposedNameDistinct checks that originals that sanitise to the same characters stay distinct, including
// long names that differ only after the truncation point.
func TestExposedNameDistinct(t *testing.T) {
	groups := [][]string{
		{"a.b", "a b", "a/b", "a:b", "a\tb", "aéb"[:3] + "b"},
		{"é", "è", "ü", "\x00", "."},
		{strings.Repeat("x", 70) + "1", strings.Repeat("x", 70) + "2", strings.Repeat("x", 70) + ".", strings.Repeat("x", 65)},
	}
	for _, g := range groups {
		seen := map[string]string{}
		for _, n := range g {
			got := exposedName("p__", n, maxName)
			if !strictRE.MatchString(got) {
				t.Errorf("exposedName(%q) = %q: not strict", n, got)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("%q and %q both expose as %q", other, n, got)
			}
			seen[got] = n
		}
	}
}

// TestExposedNameStable pins the hash so that a change of the scheme, which would break clients that stored tool
// names across restarts and replicas, is deliberate.
func TestExposedNameStable(t *testing.T) {
	if got, want := exposedName("fake__", "math.add", maxName), "fake__math_add_a280608b"; got != want {
		t.Fatalf("exposedName = %q, want %q (the exposed form must be stable across releases)", got, want)
	}
}

func FuzzExposedName(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", "héllo", strings.Repeat("z", 200)} {
		f.Add("p__", s)
	}
	f.Fuzz(func(t *testing.T, prefix, name string) {
		got := exposedName(prefix, name, defaultMaxToolNameLength)
		if !strictRE.MatchString(got) || len(got) > defaultMaxToolNameLength {
			t.Fatalf("exposedName(%q, %q) = %q: not strict within %d", prefix, name, got, defaultMaxToolNameLength)
		}
		if strictName(prefix+name) && len(prefix+name) <= defaultMaxToolNameLength && got != prefix+name {
			t.Fatalf("strict name %q changed to %q", prefix+name, got)
		}
	})
}

// TestNameBudget: with the default budget (46: what Claude Code's "mcp__switchboard__" prefix leaves of the API's
// 64), a longer name is shortened deterministically and collision-free; the budget comes from Options and stays
// within [12, 64].
func TestNameBudget(t *testing.T) {
	long := "everything-http__trigger-long-running-operation" // 47 characters: Claude Code rejected the session
	got := exposedName("", long, defaultMaxToolNameLength)
	if len(got) != defaultMaxToolNameLength || !strings.HasPrefix(got, long[:37]+"_") || !strictRE.MatchString(got) {
		t.Errorf("exposedName(%q) = %q (%d chars), want 46 characters: 37 kept, _ and a hash", long, got, len(got))
	}
	if len("mcp__switchboard__"+got) > 64 {
		t.Errorf("%q is still rejected under Claude Code's prefix", got)
	}
	if other := exposedName("", long[:len(long)-1]+"x", defaultMaxToolNameLength); other == got {
		t.Errorf("two names cut alike collide as %q", got)
	}
	if fits := "fs__read_file"; exposedName("", fits, defaultMaxToolNameLength) != fits {
		t.Errorf("a name within the budget changed")
	}
	for _, tc := range []struct{ opt, want int }{{0, 46}, {64, 64}, {100, 64}, {3, 12}, {30, 30}} {
		if got := (&Options{MaxToolNameLength: tc.opt}).nameBudget(); got != tc.want {
			t.Errorf("MaxToolNameLength %d: budget %d, want %d", tc.opt, got, tc.want)
		}
	}
}

// TestRejectedNames: the live catalog's tool names that a stated host would reject under its prefix.
func TestRejectedNames(t *testing.T) {
	long := strings.Repeat("t", 41)
	tr := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		defaultAnswer(c, m, fakeInitCaps, `[{"name":"add","inputSchema":{"type":"object"}},{"name":"`+long+`","inputSchema":{"type":"object"}}]`)
	})
	r := startRouter(t, Options{MaxToolNameLength: 64, Hosts: []HostLimit{{Name: "Claude Code", Prefix: "mcp__switchboard__", MaxLength: 64}}},
		UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: tr, Kind: "stdio"})
	got := r.RejectedNames()
	want := []RejectedName{{Host: "Claude Code", Name: "fake__" + long, Length: 18 + 6 + 41, Limit: 64}}
	if !slices.Equal(got, want) {
		t.Errorf("RejectedNames = %+v, want %+v", got, want)
	}
}

package pin

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	h1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	h2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	h3 = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// sampleUpstreams has two upstreams, given out of order, one with tools and prompts and one with tools only, and
// an upstream pinned with no items.
func sampleUpstreams() map[string]Locked {
	return map[string]Locked{
		"zeta": {Tools: map[string]string{"write": h2, "read": h1}},
		"alpha": {
			Tools:   map[string]string{"search": h3, "<b>&co": h1},
			Prompts: map[string]string{"review": h2},
		},
		"empty": {},
	}
}

// goldenSample is sampleUpstreams' lock file: version first, upstreams and items sorted, tools before prompts,
// two-space indentation, HTML characters as they are, a final newline.
const goldenSample = `{
  "version": 1,
  "upstreams": {
    "alpha": {
      "tools": {
        "<b>&co": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
        "search": "sha256:3333333333333333333333333333333333333333333333333333333333333333"
      },
      "prompts": {
        "review": "sha256:2222222222222222222222222222222222222222222222222222222222222222"
      }
    },
    "empty": {},
    "zeta": {
      "tools": {
        "read": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
        "write": "sha256:2222222222222222222222222222222222222222222222222222222222222222"
      }
    }
  }
}
`

func TestMarshalGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		lock *Lock
		want string
	}{
		{"sample", NewLock(sampleUpstreams()), goldenSample},
		{"no upstreams", NewLock(nil), "{\n  \"version\": 1,\n  \"upstreams\": {}\n}\n"},
		{"empty map", NewLock(map[string]Locked{}), "{\n  \"version\": 1,\n  \"upstreams\": {}\n}\n"},
		{"zero Lock", &Lock{}, "{\n  \"version\": 1,\n  \"upstreams\": {}\n}\n"},
		{"built with With", (*Lock)(nil).With("u", Prompt, "p", h2).With("u", Tool, "t", h1),
			"{\n  \"version\": 1,\n  \"upstreams\": {\n    \"u\": {\n      \"tools\": {\n        \"t\": \"" + h1 +
				"\"\n      },\n      \"prompts\": {\n        \"p\": \"" + h2 + "\"\n      }\n    }\n  }\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(c.lock.Marshal()); got != c.want {
				t.Errorf("Marshal() =\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestMarshalDeterministic: the same pins give the same bytes, however the lock was built (map iteration order
// is random, so building it item by item in that order, repeatedly, catches an encoding that follows it).
func TestMarshalDeterministic(t *testing.T) {
	want := NewLock(sampleUpstreams()).Marshal()
	for i := 0; i < 50; i++ {
		l := NewLock(map[string]Locked{"empty": {}})
		for up, u := range sampleUpstreams() {
			for name, h := range u.Tools {
				l = l.With(up, Tool, name, h)
			}
			for name, h := range u.Prompts {
				l = l.With(up, Prompt, name, h)
			}
		}
		if got := l.Marshal(); !bytes.Equal(got, want) {
			t.Fatalf("Marshal() differs between equal locks:\n%s\nand\n%s", got, want)
		}
		if got := NewLock(sampleUpstreams()).Marshal(); !bytes.Equal(got, want) {
			t.Fatalf("Marshal() not deterministic:\n%s\nand\n%s", got, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name string
		ups  map[string]Locked
	}{
		{"sample", sampleUpstreams()},
		{"none", map[string]Locked{}},
		{"unusual names", map[string]Locked{
			"up/with spaces ünïcode 日本": {Tools: map[string]string{"tool\"quote\\back\nline\u200b": h1}},
			"<script>":                  {Prompts: map[string]string{"&amp;": h2}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewLock(c.ups).Marshal()
			l, err := ParseLock(b)
			if err != nil {
				t.Fatalf("ParseLock(Marshal()): %v\n%s", err, b)
			}
			if got := l.Upstreams(); !reflect.DeepEqual(got, c.ups) {
				t.Errorf("Upstreams() after a round trip = %#v, want %#v", got, c.ups)
			}
			if again := l.Marshal(); !bytes.Equal(again, b) {
				t.Errorf("Marshal(ParseLock(b)) != b:\n%s\nand\n%s", again, b)
			}
			for up, u := range c.ups {
				if !l.Pinned(up) {
					t.Errorf("Pinned(%q) = false after a round trip", up)
				}
				for kind, m := range map[Kind]map[string]string{Tool: u.Tools, Prompt: u.Prompts} {
					for name, want := range m {
						if got, ok := l.Get(up, kind, name); !ok || got != want {
							t.Errorf("Get(%q, %s, %q) = %q, %v; want %q, true", up, kind, name, got, ok, want)
						}
					}
				}
			}
		})
	}
}

func TestParseLockGolden(t *testing.T) {
	l, err := ParseLock([]byte(goldenSample))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Upstreams(), sampleUpstreams(); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseLock(golden).Upstreams() = %#v, want %#v", got, want)
	}
}

func TestParseLockAccepts(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want map[string]Locked
	}{
		{"compact", `{"version":1,"upstreams":{"u":{"tools":{"t":"h"}}}}`, map[string]Locked{"u": {Tools: map[string]string{"t": "h"}}}},
		{"members in another order", `{"upstreams":{"u":{"prompts":{"p":"h"},"tools":{"t":"g"}}},"version":1}`,
			map[string]Locked{"u": {Tools: map[string]string{"t": "g"}, Prompts: map[string]string{"p": "h"}}}},
		{"no upstreams member", `{"version":1}`, map[string]Locked{}},
		{"null upstreams", `{"version":1,"upstreams":null}`, map[string]Locked{}},
		{"upstream with no items", `{"version":1,"upstreams":{"u":{}}}`, map[string]Locked{"u": {}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ParseLock([]byte(c.in))
			if err != nil {
				t.Fatalf("ParseLock(%s): %v", c.in, err)
			}
			if got := l.Upstreams(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ParseLock(%s).Upstreams() = %#v, want %#v", c.in, got, c.want)
			}
		})
	}
}

func TestParseLockRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		says []string // the error mentions each
	}{
		{"empty", ``, []string{"not a switchboard lock file"}},
		{"not JSON", `version = 1`, []string{"not a switchboard lock file"}},
		{"truncated", goldenSample[:len(goldenSample)/2], []string{"not a switchboard lock file"}},
		{"an array", `[]`, []string{"not a switchboard lock file"}},
		{"version 2", `{"version":2,"upstreams":{}}`, []string{"version 2", "switchboard pin"}},
		{"version 0", `{"version":0,"upstreams":{}}`, []string{"version 0", "switchboard pin"}},
		{"no version", `{"upstreams":{}}`, []string{"version 0", "switchboard pin"}},
		{"null", `null`, []string{"switchboard pin"}},
		{"version as a string", `{"version":"1","upstreams":{}}`, []string{"not a switchboard lock file"}},
		{"unknown top-level member", `{"version":1,"upstreams":{},"extra":true}`, []string{"not a switchboard lock file", "extra"}},
		{"unknown upstream member", `{"version":1,"upstreams":{"u":{"tools":{"t":"h"},"resources":{"r":"h"}}}}`,
			[]string{"not a switchboard lock file", "resources"}},
		{"empty tool hash", `{"version":1,"upstreams":{"u":{"tools":{"t":""}}}}`, []string{`"u"`, "empty"}},
		{"empty prompt hash", `{"version":1,"upstreams":{"u":{"prompts":{"p":""}}}}`, []string{`"u"`, "empty"}},
		{"empty tool name", `{"version":1,"upstreams":{"u":{"tools":{"":"h"}}}}`, []string{`"u"`, "empty"}},
		{"empty prompt name", `{"version":1,"upstreams":{"u":{"prompts":{"":"h"}}}}`, []string{`"u"`, "empty"}},
		{"empty hash among good ones", `{"version":1,"upstreams":{"a":{"tools":{"t":"h"}},"b":{"tools":{"t":"h","u":""}}}}`, []string{`"b"`, "empty"}},
		{"a hash that is not a string", `{"version":1,"upstreams":{"u":{"tools":{"t":1}}}}`, []string{"not a switchboard lock file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ParseLock([]byte(c.in))
			if err == nil {
				t.Fatalf("ParseLock(%s) = %v, want an error", c.in, l.Upstreams())
			}
			if l != nil {
				t.Errorf("ParseLock(%s) returned a lock with its error", c.in)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("ParseLock(%s) error %q does not mention %q", c.in, err, s)
				}
			}
			if IsNotExist(err) {
				t.Errorf("IsNotExist(%v) = true for a parse error", err)
			}
		})
	}
}

func TestNewLockCopies(t *testing.T) {
	ups := sampleUpstreams()
	l := NewLock(ups)
	ups["alpha"].Tools["search"] = "changed"
	ups["alpha"].Prompts["new"] = "added"
	ups["new"] = Locked{}
	delete(ups, "zeta")
	if got, want := l.Upstreams(), sampleUpstreams(); !reflect.DeepEqual(got, want) {
		t.Errorf("changing NewLock's argument changed the lock: %#v, want %#v", got, want)
	}
}

func TestUpstreamsCopies(t *testing.T) {
	l := NewLock(sampleUpstreams())
	got := l.Upstreams()
	got["alpha"].Tools["search"] = "changed"
	got["alpha"].Prompts["new"] = "added"
	got["new"] = Locked{}
	delete(got, "zeta")
	if again, want := l.Upstreams(), sampleUpstreams(); !reflect.DeepEqual(again, want) {
		t.Errorf("changing Upstreams' result changed the lock: %#v, want %#v", again, want)
	}
	if !bytes.Equal(l.Marshal(), []byte(goldenSample)) {
		t.Errorf("changing Upstreams' result changed Marshal:\n%s", l.Marshal())
	}
}

func TestWith(t *testing.T) {
	orig := NewLock(sampleUpstreams())
	before := orig.Marshal()
	for _, c := range []struct {
		name           string
		upstream       string
		kind           Kind
		item, hash     string
		newlyPinnedUps bool
	}{
		{"replace a tool's hash", "alpha", Tool, "search", h2, false},
		{"add a tool", "alpha", Tool, "fetch", h3, false},
		{"add a prompt to an upstream with tools only", "zeta", Prompt, "summarise", h3, false},
		{"add a tool to an upstream with no items", "empty", Tool, "t", h1, false},
		{"a new upstream", "new", Prompt, "p", h1, true},
		{"a tool named like a prompt", "alpha", Tool, "review", h3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := orig.With(c.upstream, c.kind, c.item, c.hash)
			if n == orig {
				t.Fatal("With returned the same lock")
			}
			if got, ok := n.Get(c.upstream, c.kind, c.item); !ok || got != c.hash {
				t.Errorf("With(...).Get = %q, %v; want %q, true", got, ok, c.hash)
			}
			if !n.Pinned(c.upstream) {
				t.Errorf("With(%q, ...).Pinned(%q) = false", c.upstream, c.upstream)
			}
			if orig.Pinned(c.upstream) == c.newlyPinnedUps {
				t.Errorf("original Pinned(%q) = %v", c.upstream, orig.Pinned(c.upstream))
			}
			// Everything else is as it was.
			want := sampleUpstreams()
			u := want[c.upstream]
			if c.kind == Prompt {
				if u.Prompts == nil {
					u.Prompts = map[string]string{}
				}
				u.Prompts[c.item] = c.hash
			} else {
				if u.Tools == nil {
					u.Tools = map[string]string{}
				}
				u.Tools[c.item] = c.hash
			}
			want[c.upstream] = u
			if got := n.Upstreams(); !reflect.DeepEqual(got, want) {
				t.Errorf("With(...).Upstreams() = %#v, want %#v", got, want)
			}
			// The original is unchanged.
			if got := orig.Marshal(); !bytes.Equal(got, before) {
				t.Errorf("With changed the original lock:\n%s", got)
			}
			if got, want := orig.Upstreams(), sampleUpstreams(); !reflect.DeepEqual(got, want) {
				t.Errorf("With changed the original lock: %#v", got)
			}
		})
	}
}

// TestWithBranches: two locks made by With from one share nothing (a shallow copy would share the item maps).
func TestWithBranches(t *testing.T) {
	base := NewLock(nil).With("u", Tool, "t", h1)
	a := base.With("u", Tool, "a", h2)
	b := base.With("u", Tool, "b", h3)
	a2 := a.With("u", Tool, "t", h3)
	for _, c := range []struct {
		name  string
		l     *Lock
		tools map[string]string
	}{
		{"base", base, map[string]string{"t": h1}},
		{"a", a, map[string]string{"t": h1, "a": h2}},
		{"b", b, map[string]string{"t": h1, "b": h3}},
		{"a2", a2, map[string]string{"t": h3, "a": h2}},
	} {
		if got := c.l.Upstreams()["u"].Tools; !reflect.DeepEqual(got, c.tools) {
			t.Errorf("%s: tools %v, want %v", c.name, got, c.tools)
		}
	}
}

func TestNilLock(t *testing.T) {
	var l *Lock
	if l.Pinned("u") {
		t.Error("nil lock: Pinned = true")
	}
	if l.Pinned("") {
		t.Error(`nil lock: Pinned("") = true`)
	}
	for _, kind := range []Kind{Tool, Prompt} {
		if h, ok := l.Get("u", kind, "t"); ok || h != "" {
			t.Errorf("nil lock: Get(u, %s, t) = %q, %v; want \"\", false", kind, h, ok)
		}
	}
	n := l.With("u", Tool, "t", h1)
	if n == nil {
		t.Fatal("nil lock: With returned nil")
	}
	if got, ok := n.Get("u", Tool, "t"); !ok || got != h1 {
		t.Errorf("nil lock: With(...).Get = %q, %v; want %q, true", got, ok, h1)
	}
	if _, ok := n.Get("u", Prompt, "t"); ok {
		t.Error("nil lock: With(Tool).Get(Prompt) found the tool")
	}
	if want := map[string]Locked{"u": {Tools: map[string]string{"t": h1}}}; !reflect.DeepEqual(n.Upstreams(), want) {
		t.Errorf("nil lock: With(...).Upstreams() = %#v, want %#v", n.Upstreams(), want)
	}
	p := l.With("u", Prompt, "p", h2)
	if want := map[string]Locked{"u": {Prompts: map[string]string{"p": h2}}}; !reflect.DeepEqual(p.Upstreams(), want) {
		t.Errorf("nil lock: With(Prompt).Upstreams() = %#v, want %#v", p.Upstreams(), want)
	}
}

// TestNilLockUpstreams: Upstreams and Marshal accept a nil lock (no lock file yet), as Pinned, Get and With do.
func TestNilLockUpstreams(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*Lock)
	}{
		{"Upstreams", func(l *Lock) { _ = l.Upstreams() }},
		{"Marshal", func(l *Lock) { _ = l.Marshal() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("bug: (*Lock)(nil).%s() panics (%v), though Pinned, Get and With accept a nil lock", c.name, r)
				}
			}()
			c.f(nil)
		})
	}
}

func TestGet(t *testing.T) {
	l := NewLock(sampleUpstreams())
	for _, c := range []struct {
		upstream string
		kind     Kind
		name     string
		want     string
		ok       bool
	}{
		{"alpha", Tool, "search", h3, true},
		{"alpha", Tool, "<b>&co", h1, true},
		{"alpha", Prompt, "review", h2, true},
		{"alpha", Tool, "review", "", false},   // a prompt, not a tool
		{"alpha", Prompt, "search", "", false}, // a tool, not a prompt
		{"alpha", Tool, "missing", "", false},
		{"zeta", Tool, "read", h1, true},
		{"zeta", Prompt, "read", "", false},
		{"empty", Tool, "read", "", false},
		{"missing", Tool, "read", "", false},
		{"", Tool, "", "", false},
	} {
		if got, ok := l.Get(c.upstream, c.kind, c.name); got != c.want || ok != c.ok {
			t.Errorf("Get(%q, %s, %q) = %q, %v; want %q, %v", c.upstream, c.kind, c.name, got, ok, c.want, c.ok)
		}
	}
	for up, want := range map[string]bool{"alpha": true, "zeta": true, "empty": true, "missing": false, "": false, "Alpha": false} {
		if got := l.Pinned(up); got != want {
			t.Errorf("Pinned(%q) = %v, want %v", up, got, want)
		}
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.lock")
	l := NewLock(sampleUpstreams())
	if err := l.Write(path); err != nil {
		t.Fatalf("Write: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != goldenSample {
		t.Errorf("the file holds\n%s\nwant\n%s", b, goldenSample)
	}
	r, err := ReadLock(path)
	if err != nil {
		t.Fatalf("ReadLock: %v", err)
	}
	if got, want := r.Upstreams(), sampleUpstreams(); !reflect.DeepEqual(got, want) {
		t.Errorf("ReadLock(Write(l)).Upstreams() = %#v, want %#v", got, want)
	}
	assertDir(t, dir, "switchboard.lock")
	assertMode(t, path)

	// Writing again replaces the file, and still leaves nothing else behind.
	l2 := l.With("zeta", Tool, "read", h3)
	if err := l2.Write(path); err != nil {
		t.Fatalf("second Write: %v", err)
	}
	r2, err := ReadLock(path)
	if err != nil {
		t.Fatalf("second ReadLock: %v", err)
	}
	if got, _ := r2.Get("zeta", Tool, "read"); got != h3 {
		t.Errorf("after a second Write: Get = %q, want %q", got, h3)
	}
	assertDir(t, dir, "switchboard.lock")
	assertMode(t, path)
}

// TestWriteMode: the file is 0644 whatever the mode of the file it replaces.
func TestWriteMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lock.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewLock(nil).Write(path); err != nil {
		t.Fatalf("Write: %v", err)
	}
	assertMode(t, path)
	assertDir(t, dir, "lock.json")
}

func TestWriteErrors(t *testing.T) {
	t.Run("nonexistent directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "missing", "switchboard.lock")
		if err := NewLock(sampleUpstreams()).Write(path); err == nil {
			t.Fatal("Write into a directory that does not exist: no error")
		}
		assertDir(t, dir)
	})
	t.Run("path is a directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "switchboard.lock")
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, "keep"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := NewLock(sampleUpstreams()).Write(path); err == nil {
			t.Fatal("Write over a directory: no error")
		}
		// The temporary file is removed after the failed rename.
		assertDir(t, dir, "switchboard.lock")
		assertDir(t, path, "keep")
	})
	t.Run("parent is a file", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := NewLock(nil).Write(filepath.Join(file, "switchboard.lock")); err == nil {
			t.Fatal("Write under a file: no error")
		}
		assertDir(t, dir, "file")
	})
}

func TestReadLockErrors(t *testing.T) {
	dir := t.TempDir()

	_, err := ReadLock(filepath.Join(dir, "missing.lock"))
	if err == nil {
		t.Fatal("ReadLock of a missing file: no error")
	}
	if !IsNotExist(err) {
		t.Errorf("IsNotExist(%v) = false for a missing file", err)
	}
	if _, err := ReadLock(filepath.Join(dir, "missing", "dir", "x.lock")); !IsNotExist(err) {
		t.Errorf("IsNotExist(%v) = false for a file in a missing directory", err)
	}

	bad := filepath.Join(dir, "bad.lock")
	if err := os.WriteFile(bad, []byte(`{"version":9,"upstreams":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadLock(bad)
	if err == nil {
		t.Fatal("ReadLock of a version-9 file: no error")
	}
	if IsNotExist(err) || !strings.Contains(err.Error(), "switchboard pin") {
		t.Errorf("ReadLock of a version-9 file: %v (IsNotExist %v), want an error mentioning switchboard pin", err, IsNotExist(err))
	}

	if _, err := ReadLock(dir); err == nil || IsNotExist(err) {
		t.Errorf("ReadLock of a directory: %v, want an error other than not-exist", err)
	}

	if IsNotExist(nil) {
		t.Error("IsNotExist(nil) = true")
	}
}

// assertDir checks that dir holds exactly the given names (so no temporary file is left behind).
func assertDir(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) && !(len(got) == 0 && len(names) == 0) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

func assertMode(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v, want a regular file, 0644", path, fi.Mode())
	}
}

package pin

import (
	"strings"
	"testing"
)

// TestLockMatchLegacy: a lock file written before pins were RFC 8785 still pins: its hash of a definition that has
// not changed matches (as the definition's hash today), one of a changed definition does not, and the next write
// of the item is in today's form.
func TestLockMatchLegacy(t *testing.T) {
	// Two spellings the older form hashed apart from today's: a number as written, and U+2028 escaped.
	def := `{"name":"t","description":"a` + "\u2028" + `b","inputSchema":{"type":"object","properties":{"n":{"maximum":1.0}}}}`
	changed := strings.Replace(def, "1.0", "2.0", 1)
	seen, old := mustHash(t, Tool, def), mustLegacy(t, def)
	if seen == old {
		t.Fatalf("test bug: the definition hashes alike in both forms (%s)", seen)
	}
	lock, err := ParseLock([]byte(`{"version":1,"upstreams":{"u":{"tools":{"t":"` + old + `"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := lock.Match("u", Tool, "t", seen, []byte(def)); !ok || got != seen {
		t.Errorf("Match of the unchanged definition = %s, %v; want today's hash %s", got, ok, seen)
	}
	if got, ok := lock.Match("u", Tool, "t", mustHash(t, Tool, changed), []byte(changed)); !ok || got != old {
		t.Errorf("Match of a changed definition = %s, %v; want the pin as locked, %s", got, ok, old)
	}
	if got, ok := lock.Match("u", Tool, "other", seen, []byte(def)); ok {
		t.Errorf("Match of an item the lock does not hold = %s, true", got)
	}
	if got, ok := lock.Match("u", Prompt, "t", seen, []byte(def)); ok {
		t.Errorf("Match of the item as a prompt = %s, true", got)
	}

	// Written again (an approval's With, or switchboard pin): today's form, which matches as it is.
	again, err := ParseLock(lock.With("u", Tool, "t", seen).Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := again.Get("u", Tool, "t"); h != seen {
		t.Errorf("rewritten pin %s, want today's %s", h, seen)
	}
	if got, ok := again.Match("u", Tool, "t", seen, []byte(def)); !ok || got != seen {
		t.Errorf("Match after the rewrite = %s, %v; want %s", got, ok, seen)
	}
}

// TestLegacyHashGolden: legacyHash is the form lock files were written in: TestHashGolden's value, which today's
// form gives too, as it does for every definition without a respelt number or a character the two forms escape
// differently.
func TestLegacyHashGolden(t *testing.T) {
	if got := mustLegacy(t, goldenTool); got != goldenHash {
		t.Errorf("legacyHash(golden definition) = %s, want %s", got, goldenHash)
	}
}

func mustLegacy(t *testing.T, def string) string {
	t.Helper()
	h, err := legacyHash(Tool, []byte(def))
	if err != nil {
		t.Fatalf("legacyHash(%s): %v", def, err)
	}
	return h
}

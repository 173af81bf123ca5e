package search_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

// queryTexts is every query of the evaluation set plus each tool's name, which reach the terms of every doc.
func queryTexts(docs []search.Doc) []string {
	var qs []string
	for _, q := range evalset.Queries() {
		qs = append(qs, q.Text)
	}
	for _, d := range docs {
		qs = append(qs, d.Name)
	}
	return qs
}

// results runs every query on ix.
func results(ix *search.Index, qs []string) [][]search.Hit {
	out := make([][]search.Hit, len(qs))
	for i, q := range qs {
		out[i] = ix.Search(q, 50, nil)
	}
	return out
}

func sameResults(t *testing.T, what string, qs []string, got, want [][]search.Hit) {
	t.Helper()
	bad := 0
	for i := range qs {
		if !reflect.DeepEqual(got[i], want[i]) {
			if bad++; bad <= 3 {
				t.Errorf("%s: %q:\n got %v\nwant %v", what, qs[i], got[i], want[i])
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d queries differ in all", what, bad)
	}
}

// TestWithEqualsBuild derives an index in steps (adds, replacements, removals, re-adds into freed slots) and checks
// that it ranks exactly, scores included, as Build of the final docs, and that the indexes it came from did not
// change.
func TestWithEqualsBuild(t *testing.T) {
	docs := evalset.Docs()
	qs := queryTexts(docs)

	ix0 := search.Build(docs[:350])
	before := results(ix0, qs)

	ix1 := ix0.With(docs[350:], nil)
	sameResults(t, "Build+With(add)", qs, results(ix1, qs), results(search.Build(docs), qs))

	final := append([]search.Doc(nil), docs...)
	var changed []search.Doc
	for i := 0; i < 60; i += 3 {
		final[i].Description = "changed: " + final[i].Description + " 天气预报 searching"
		final[i].Params = append(final[i].Params, search.Param{Name: "extraParam", Description: "one more"})
		changed = append(changed, final[i])
	}
	var removed []string
	for _, d := range docs[100:130] {
		removed = append(removed, d.Name)
	}
	removed = append(removed, "no_such_tool")
	ix2 := ix1.With(changed, removed)
	ix3 := ix2.With(docs[100:110], nil) // back into the freed slots
	final = append(final[:110], final[130:]...)

	want := search.Build(final)
	if ix3.Len() != want.Len() || ix3.Len() != len(final) {
		t.Errorf("Len = %d, Build's %d, want %d", ix3.Len(), want.Len(), len(final))
	}
	sameResults(t, "With(change, remove)+With(re-add)", qs, results(ix3, qs), results(want, qs))
	sameResults(t, "the first index after deriving others", qs, results(ix0, qs), before)

	// Removing everything, then adding it back.
	var all []string
	for _, d := range final {
		all = append(all, d.Name)
	}
	empty := ix3.With(nil, all)
	if empty.Len() != 0 || empty.Search("issue", 10, nil) != nil {
		t.Errorf("after removing all: Len %d, search %v", empty.Len(), empty.Search("issue", 10, nil))
	}
	sameResults(t, "With(remove all)+With(add all)", qs, results(empty.With(final, nil), qs), results(want, qs))
}

func TestWithEdgeCases(t *testing.T) {
	d := func(name, desc string) search.Doc { return search.Doc{Name: name, Description: desc} }
	var nilIndex *search.Index
	ix := nilIndex.With([]search.Doc{d("a_tool", "weather forecast")}, nil)
	if got := names(ix.Search("weather", 5, nil)); !reflect.DeepEqual(got, []string{"a_tool"}) {
		t.Errorf("nil.With: %v", got)
	}
	if ix.With(nil, nil) != ix {
		t.Error("With of nothing made a new index")
	}
	var zero search.Index
	fromZero := zero.With([]search.Doc{d("b_tool", "weather")}, nil)
	if got := names(fromZero.Search("weather", 5, nil)); !reflect.DeepEqual(got, []string{"b_tool"}) {
		t.Errorf("zero Index.With: %v", got)
	}
	// A name both removed and upserted is upserted.
	ix = ix.With([]search.Doc{d("a_tool", "stock prices")}, []string{"a_tool"})
	got, old := names(ix.Search("stock", 5, nil)), ix.Search("weather", 5, nil)
	if !reflect.DeepEqual(got, []string{"a_tool"}) || old != nil {
		t.Errorf("remove+upsert: %v, old description still found: %v", got, old)
	}
	// Build keeps the last of two docs of one name.
	ix = search.Build([]search.Doc{d("c_tool", "weather"), d("c_tool", "stocks")})
	if ix.Len() != 1 || ix.Search("weather", 5, nil) != nil || len(ix.Search("stocks", 5, nil)) != 1 {
		t.Errorf("duplicate names: Len %d", ix.Len())
	}
}

func TestSearchEdgeCases(t *testing.T) {
	ix := search.Build([]search.Doc{
		{Name: "beta_alpha", Description: "same words"},
		{Name: "alpha_beta", Description: "same words"},
		{Name: "gamma", Description: "other"},
	})
	var nilIndex *search.Index
	var zero search.Index
	for _, tt := range []struct {
		name string
		ix   *search.Index
		q    string
		n    int
	}{
		{"nil index", nilIndex, "alpha", 10},
		{"zero index", &zero, "alpha", 10},
		{"empty query", ix, "", 10},
		{"stop words only", ix, "the of and which", 10},
		{"unknown words", ix, "zebra", 10},
		{"limit 0", ix, "alpha", 0},
		{"negative limit", ix, "alpha", -1},
	} {
		if got := tt.ix.Search(tt.q, tt.n, nil); got != nil {
			t.Errorf("%s: %v, want nil", tt.name, got)
		}
	}
	if nilIndex.Len() != 0 || zero.Len() != 0 {
		t.Error("empty index with a length")
	}
	// Equal scores are ordered by name, and the limit cuts after ordering.
	got := ix.Search("alpha beta", 10, nil)
	if len(got) != 2 || got[0].Name != "alpha_beta" || got[1].Name != "beta_alpha" || got[0].Score != got[1].Score {
		t.Errorf("ties: %v", got)
	}
	if got := ix.Search("alpha beta", 1, nil); len(got) != 1 || got[0].Name != "alpha_beta" {
		t.Errorf("ties, limit 1: %v", got)
	}
	// A repeated query word counts once.
	if a, b := ix.Search("gamma", 1, nil), ix.Search("gamma gamma", 1, nil); !reflect.DeepEqual(a, b) {
		t.Errorf("repeated word: %v vs %v", a, b)
	}
}

// TestAllowHidesDocs hides the best docs of each query, and more, and checks that hidden docs take no place:
// none is returned, the limit is filled from visible docs (as many as match), the results are best first, and
// allow is asked once per doc.
func TestAllowHidesDocs(t *testing.T) {
	docs := evalset.Docs()
	ix := search.Build(docs)
	for _, q := range evalset.Queries() {
		full := ix.Search(q.Text, len(docs), nil)
		hidden := map[string]bool{}
		for i, h := range full {
			if i < 3 || i%2 == 0 || strings.HasPrefix(h.Name, "github__") {
				hidden[h.Name] = true
			}
		}
		asked := map[string]int{}
		allow := func(name string) bool { asked[name]++; return !hidden[name] }
		got := ix.Search(q.Text, 5, allow)
		if want := min(5, len(full)-len(hidden)); len(got) != want {
			t.Errorf("%q: %d results, want %d", q.Text, len(got), want)
		}
		for i, h := range got {
			if hidden[h.Name] {
				t.Errorf("%q: hidden %s returned", q.Text, h.Name)
			}
			if i > 0 && (got[i-1].Score < h.Score || got[i-1].Score == h.Score && got[i-1].Name > h.Name) {
				t.Errorf("%q: results out of order: %v", q.Text, got)
			}
		}
		for name, n := range asked {
			if n > 2 { // once for the statistics, once when ranked
				t.Errorf("%q: allow(%q) called %d times", q.Text, name, n)
			}
		}
		st := ix.Stats(allow)
		clear(asked)
		if again := ix.SearchIn(st, q.Text, 5, allow); !reflect.DeepEqual(again, got) {
			t.Errorf("%q: SearchIn with the statistics answers %v, Search %v", q.Text, again, got)
		}
		for name, n := range asked {
			if n != 1 {
				t.Errorf("%q: with statistics kept, allow(%q) called %d times", q.Text, name, n)
			}
		}
	}
	if got := ix.Search("create issue", 10, func(string) bool { return false }); got != nil {
		t.Errorf("nothing allowed: %v", got)
	}
}

// TestHiddenLeaveNoTrace: neither what hidden docs say nor how many there are can be read from the results.
// Three indexes hold the same visible docs; in the second the hidden docs' texts are rotated among them, and the
// third has 50 more hidden docs, longer ones: every search returns the same names with the same scores. With
// document frequencies, the doc count or the mean lengths counted over the whole index, the visible scores would
// move with the hidden docs.
func TestHiddenLeaveNoTrace(t *testing.T) {
	docs := evalset.Docs()
	hidden := map[string]bool{}
	var hid []int
	for i, d := range docs {
		if i%3 == 0 {
			hidden[d.Name] = true
			hid = append(hid, i)
		}
	}
	rotated := slices.Clone(docs)
	for j, i := range hid {
		from := docs[hid[(j+1)%len(hid)]]
		from.Name = docs[i].Name
		rotated[i] = from
	}
	// A third index has more hidden docs, and longer ones: how many are hidden must not show either.
	more := slices.Clone(rotated)
	for i, d := range docs[:50] {
		d.Name = fmt.Sprintf("hidden_extra_%d", i)
		d.Description += " " + d.Description
		hidden[d.Name] = true
		more = append(more, d)
	}
	a, b, c := search.Build(docs), search.Build(rotated), search.Build(more)
	allow := func(name string) bool { return !hidden[name] }
	for _, q := range evalset.Queries() {
		x, y, z := a.Search(q.Text, 10, allow), b.Search(q.Text, 10, allow), c.Search(q.Text, 10, allow)
		if !reflect.DeepEqual(x, y) || !reflect.DeepEqual(x, z) {
			t.Errorf("%q: the hidden docs show through:\n%v\n%v\n%v", q.Text, x, y, z)
		}
	}
}

// TestConcurrentSearchAndWith searches, from several goroutines, the index being replaced and the index others are
// derived from, while one goroutine derives and publishes new ones. Run with -race.
func TestConcurrentSearchAndWith(t *testing.T) {
	docs := evalset.Docs()
	qs := queryTexts(docs)[:60]
	first := search.Build(docs)
	want := results(first, qs)
	var cur atomic.Pointer[search.Index]
	cur.Store(first)

	var wg sync.WaitGroup
	var done atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := range 40 {
			d := docs[(i*7)%len(docs)]
			d.Description = fmt.Sprintf("version %d of %s", i, d.Description)
			cur.Store(cur.Load().With([]search.Doc{d}, []string{docs[(i*11+3)%len(docs)].Name}))
			first.With([]search.Doc{d}, nil) // derived and dropped: must not disturb first
		}
	}()
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200 || !done.Load(); i++ {
				q := (r*31 + i) % len(qs)
				if got := first.Search(qs[q], 50, nil); !reflect.DeepEqual(got, want[q]) {
					t.Errorf("first index changed under concurrent With: %q", qs[q])
					return
				}
				ix := cur.Load()
				for _, h := range ix.Search(qs[q], 10, func(name string) bool { return len(name)%2 == 0 }) {
					if len(h.Name)%2 != 0 {
						t.Errorf("hidden %q found", h.Name)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

package hybrid

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
)

func hits(names ...string) []search.Hit {
	out := make([]search.Hit, len(names))
	for i, n := range names {
		out[i] = search.Hit{Name: n, Score: float64(len(names) - i)}
	}
	return out
}

func hit(name string, score float64) search.Hit { return search.Hit{Name: name, Score: score} }

func rrf(k int, ranks ...int) float64 {
	s := 0.0
	for _, r := range ranks {
		s += 1 / float64(k+r)
	}
	return s
}

func sameHits(t *testing.T, got, want []search.Hit, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i].Name != want[i].Name || math.Abs(got[i].Score-want[i].Score) > 1e-6 {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
	}
}

func TestFuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		bm25, vec []search.Hit
		k, limit  int
		want      []search.Hit
	}{
		{name: "both empty", limit: 10},
		{name: "limit 0", bm25: hits("a"), vec: hits("a"), limit: 0},
		{
			name: "bm25 alone keeps its order", bm25: hits("c", "a", "b"), limit: 10,
			want: []search.Hit{hit("c", rrf(60, 1)), hit("a", rrf(60, 2)), hit("b", rrf(60, 3))},
		},
		{
			name: "vectors alone", vec: hits("x", "y"), limit: 10,
			want: []search.Hit{hit("x", rrf(60, 1)), hit("y", rrf(60, 2))},
		},
		{
			name: "in both beats first in one", bm25: hits("a", "b", "c"), vec: hits("d", "c", "b"), limit: 10,
			want: []search.Hit{
				hit("b", rrf(60, 2, 3)), hit("c", rrf(60, 3, 2)), hit("a", rrf(60, 1)), hit("d", rrf(60, 1)),
			},
		},
		{
			// b and c have equal sums in exact arithmetic but perhaps not in floating point: whatever the
			// rounding, the same input gives the same order, and a and d tie exactly and go by name.
			name: "equal firsts by name", bm25: hits("d", "x"), vec: hits("a", "y"), limit: 10,
			want: []search.Hit{hit("a", rrf(60, 1)), hit("d", rrf(60, 1)), hit("x", rrf(60, 2)), hit("y", rrf(60, 2))},
		},
		{
			// 1/61 + 1/63 > 2/62: a first and a last place beat two second places.
			name: "limit cuts", bm25: hits("a", "b", "c"), vec: hits("c", "b", "a"), limit: 2,
			want: []search.Hit{hit("a", rrf(60, 1, 3)), hit("c", rrf(60, 3, 1))},
		},
		{
			name: "a repeated name counts at its first place", bm25: hits("a", "b", "a"), vec: hits("b"), limit: 10,
			want: []search.Hit{hit("b", rrf(60, 2, 1)), hit("a", rrf(60, 1))},
		},
		{
			name: "k of 1", bm25: hits("a", "b"), vec: hits("b", "c"), k: 1, limit: 10,
			want: []search.Hit{hit("b", rrf(1, 2, 1)), hit("a", rrf(1, 1)), hit("c", rrf(1, 2))},
		},
		{
			name: "k <= 0 is DefaultK", bm25: hits("a"), k: -5, limit: 1,
			want: []search.Hit{hit("a", rrf(DefaultK, 1))},
		},
		{
			name: "scores of the inputs are ignored", limit: 10,
			bm25: []search.Hit{hit("a", 0.001), hit("b", 1000)}, vec: []search.Hit{hit("a", -5)},
			want: []search.Hit{hit("a", rrf(60, 1, 1)), hit("b", rrf(60, 2))},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Fuse(tc.bm25, tc.vec, tc.k, tc.limit)
			sameHits(t, got, tc.want, "Fuse")
			if again := Fuse(tc.bm25, tc.vec, tc.k, tc.limit); !slices.Equal(again, got) {
				t.Errorf("Fuse again = %v, was %v", again, got)
			}
		})
	}
}

// TestFuseSymmetricTies: names tied across the two lists in every way come out by name, whatever the order of
// the inputs.
func TestFuseSymmetricTies(t *testing.T) {
	t.Parallel()
	a, b := hits("n1", "n2", "n3", "n4"), hits("n4", "n3", "n2", "n1")
	got, swapped := Fuse(a, b, 0, 10), Fuse(b, a, 0, 10)
	if !slices.Equal(got, swapped) {
		t.Errorf("Fuse(a, b) = %v, Fuse(b, a) = %v", got, swapped)
	}
}

func TestRank(t *testing.T) {
	t.Parallel()
	inv := math.Sqrt(0.5)
	cands := map[string][]float32{
		"east":      {1, 0, 0},
		"north":     {0, 1, 0},
		"northeast": {2, 2, 0}, // not unit length: cosine regardless
		"west":      {-1, 0, 0},
		"up":        {0, 0, 3},
		"east2":     {5, 0, 0}, // ties with east, by name after it
		"zero":      {0, 0, 0},
		"short":     {1, 0},
		"long":      {1, 0, 0, 0},
		"secret":    {1, 0.01, 0}, // the best match for "east" but hidden
	}
	hide := func(name string) bool { return name != "secret" }
	for _, tc := range []struct {
		name  string
		query []float32
		allow func(string) bool
		limit int
		want  []search.Hit
	}{
		{
			name: "east", query: []float32{1, 0, 0}, allow: hide, limit: 10,
			want: []search.Hit{hit("east", 1), hit("east2", 1), hit("northeast", inv), hit("north", 0), hit("up", 0), hit("west", -1)},
		},
		{
			name: "query not unit length", query: []float32{0, 7, 0}, allow: hide, limit: 2,
			want: []search.Hit{hit("north", 1), hit("northeast", inv)},
		},
		{
			name: "nil allow keeps all", query: []float32{1, 0.01, 0}, limit: 1,
			want: []search.Hit{hit("secret", 1)},
		},
		{name: "limit 0", query: []float32{1, 0, 0}, limit: 0},
		{name: "empty query", query: nil, limit: 5},
		{name: "zero query", query: []float32{0, 0, 0}, limit: 5},
		{name: "no candidate of its length", query: []float32{1, 0, 0, 0, 0}, limit: 5},
		{name: "all hidden", query: []float32{1, 0, 0}, allow: func(string) bool { return false }, limit: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := map[string]int{}
			allow := tc.allow
			if allow != nil {
				allow = func(n string) bool { calls[n]++; return tc.allow(n) }
			}
			got := Rank(tc.query, cands, allow, tc.limit)
			sameHits(t, got, tc.want, "Rank")
			for n, c := range calls {
				if c > 1 {
					t.Errorf("allow(%q) called %d times", n, c)
				}
			}
		})
	}
}

// TestRankNeverHidden: over random vectors and limits, no hidden candidate is ever returned, and the visible
// ones returned are the best visible ones: hiding takes no visible candidate's place.
func TestRankNeverHidden(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const n, dims = 500, 16
	cands := map[string][]float32{}
	visible := map[string][]float32{}
	for i := range n {
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		name := fmt.Sprintf("tool_%03d", i)
		if i%3 == 0 {
			name = "hidden_" + name
		} else {
			visible[name] = v
		}
		cands[name] = v
	}
	allow := func(name string) bool { return !strings.HasPrefix(name, "hidden_") }
	for range 50 {
		q := make([]float32, dims)
		for j := range q {
			q[j] = float32(r.NormFloat64())
		}
		limit := 1 + r.IntN(40)
		got := Rank(q, cands, allow, limit)
		if len(got) != limit {
			t.Fatalf("%d hits, want %d", len(got), limit)
		}
		for _, h := range got {
			if !allow(h.Name) {
				t.Fatalf("hidden %s returned", h.Name)
			}
		}
		if want := Rank(q, visible, nil, limit); !slices.Equal(got, want) {
			t.Fatalf("with hidden candidates %v, without %v", got, want)
		}
		if !slices.IsSortedFunc(got, func(a, b search.Hit) int {
			if better(a, b) {
				return -1
			}
			return 1
		}) {
			t.Fatalf("not best first: %v", got)
		}
	}
}

// TestHybrid: BM25 and vector rankings of a small catalog fused, the hidden tool absent from both.
func TestHybrid(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m"}, nil)
	docs := []search.Doc{
		{Name: "read_file", Description: "Read the contents of a file from disk"},
		{Name: "write_file", Description: "Write text to a file on disk"},
		{Name: "list_issues", Description: "List open issues of a repository"},
		{Name: "delete_repo", Description: "Delete a repository and all of its issues"},
	}
	texts := map[string]string{}
	for _, d := range docs {
		texts[d.Name] = d.Name + " " + d.Description
	}
	vecs, err := e.Vectors(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	ix := search.Build(docs)
	allow := func(name string) bool { return name != "delete_repo" }
	const query = "open issues of a repository"
	q, err := e.Query(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	bm25, vec := ix.Search(query, 10, allow), Rank(q, vecs, allow, 10)
	got := Fuse(bm25, vec, 0, 10)
	if len(got) == 0 || got[0].Name != "list_issues" {
		t.Fatalf("fused %v (bm25 %v, vectors %v), want list_issues first", got, bm25, vec)
	}
	for _, h := range got {
		if h.Name == "delete_repo" {
			t.Fatalf("hidden tool in %v", got)
		}
	}
}

// TestBlend: the vector ranking fused in is the candidates nearest the query with a similarity above zero; one at
// zero or below, or hidden, never appears, however few BM25 found.
func TestBlend(t *testing.T) {
	cands := map[string][]float32{
		"near":     {1, 0},
		"further":  {1, 1},
		"opposite": {-1, 0},
		"across":   {0, 1},
		"hidden":   {1, 0.1},
	}
	allow := func(name string) bool { return name != "hidden" }
	for _, tc := range []struct {
		name string
		bm25 []search.Hit
		want []string
	}{
		{"no words matched", nil, []string{"near", "further"}},
		{"both", hits("across", "near"), []string{"near", "across", "further"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, h := range Blend(tc.bm25, []float32{1, 0}, cands, allow, 10) {
				got = append(got, h.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Blend = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDocText: what a tool is embedded from names it and says what it and each parameter are.
func TestDocText(t *testing.T) {
	d := search.Doc{Name: "gh__create_issue", Title: "Create issue", Description: "Opens an issue.", Upstream: "gh",
		Params: []search.Param{{Name: "title", Description: "The issue's title"}, {Name: "body"}}}
	want := "gh__create_issue\nCreate issue\nOpens an issue.\ntitle: The issue's title\nbody"
	if got := DocText(d); got != want {
		t.Errorf("DocText = %q, want %q", got, want)
	}
}

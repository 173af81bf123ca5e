package hybrid

import (
	"math"
	"slices"
	"strings"

	"github.com/switchboard-mcp/switchboard/routing/search"
)

// DefaultK is reciprocal rank fusion's constant, as in Cormack, Clarke and Büttcher (2009): a larger k flattens
// the difference the top ranks make.
const DefaultK = 60

// Fuse merges two rankings by reciprocal rank fusion: a name's score is the sum over the rankings that have it of
// 1/(k + its rank), ranks counting from 1 (a name listed twice in one ranking counts at its first place). k <= 0
// means DefaultK. It returns at most limit hits (nil when limit <= 0), best first, equal scores ordered by name.
// Only names of bm25 and vec appear: filter both by what the caller may see before fusing them.
func Fuse(bm25, vec []search.Hit, k, limit int) []search.Hit {
	if limit <= 0 || len(bm25)+len(vec) == 0 {
		return nil
	}
	if k <= 0 {
		k = DefaultK
	}
	scores := make(map[string]float64, len(bm25)+len(vec))
	for _, ranking := range [][]search.Hit{bm25, vec} {
		seen := make(map[string]bool, len(ranking))
		for i, h := range ranking {
			if seen[h.Name] {
				continue
			}
			seen[h.Name] = true
			scores[h.Name] += 1 / float64(k+i+1)
		}
	}
	top := newTop(limit)
	for name, s := range scores {
		top.add(search.Hit{Name: name, Score: s})
	}
	return top.sorted()
}

// DocText is what a tool's vector is computed from: its name, title, description and parameters, as clients see
// them.
func DocText(d search.Doc) string {
	var b strings.Builder
	b.WriteString(d.Name)
	for _, s := range []string{d.Title, d.Description} {
		if s != "" {
			b.WriteString("\n" + s)
		}
	}
	for _, p := range d.Params {
		b.WriteString("\n" + p.Name)
		if p.Description != "" {
			b.WriteString(": " + p.Description)
		}
	}
	return b.String()
}

// Blend is hybrid search's ranking: the first limit candidates by similarity to query (Rank), less those at zero
// similarity or below, fused with bm25 (Fuse, DefaultK). A tool at zero similarity is not a match by meaning:
// fused in, it would fill the results with unrelated tools in name order.
func Blend(bm25 []search.Hit, query []float32, candidates map[string][]float32, allow func(name string) bool, limit int) []search.Hit {
	vec := Rank(query, candidates, allow, limit)
	vec = slices.DeleteFunc(vec, func(h search.Hit) bool { return h.Score <= 0 })
	return Fuse(bm25, vec, 0, limit)
}

// Rank orders candidates by the cosine similarity of their vectors to query, best first, equal scores by name,
// and returns at most limit of them (nil when limit <= 0 or query is empty or zero). Candidates that allow rejects
// (none when allow is nil) are left out before ranking, so they never take a place; so are vectors of another
// length than query's, and zero vectors. allow is called at most once per candidate, from the calling goroutine.
// Scores are in [-1, 1]. The vectors need not be unit length (Embedder's are).
func Rank(query []float32, candidates map[string][]float32, allow func(name string) bool, limit int) []search.Hit {
	if limit <= 0 || len(query) == 0 {
		return nil
	}
	q := normalize(query)
	if q == nil {
		return nil
	}
	top := newTop(limit)
	for name, v := range candidates {
		if len(v) != len(q) || allow != nil && !allow(name) {
			continue
		}
		var dot, sq float64
		for i, x := range v {
			dot += float64(q[i]) * float64(x)
			sq += float64(x) * float64(x)
		}
		if sq == 0 {
			continue
		}
		s := dot / math.Sqrt(sq)
		if math.IsNaN(s) || math.IsInf(s, 0) {
			continue
		}
		top.add(search.Hit{Name: name, Score: s})
	}
	return top.sorted()
}

// normalize returns v scaled to unit length, a new slice, or nil when v is zero or not finite.
func normalize(v []float32) []float32 {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	n := math.Sqrt(sq)
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return nil
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// better orders hits: higher score first, then by name.
func better(a, b search.Hit) bool {
	return a.Score > b.Score || a.Score == b.Score && a.Name < b.Name
}

// top keeps the limit best hits added, in a min-heap whose root is the worst kept: O(n log limit) for n hits.
type top struct {
	limit int
	heap  []search.Hit
}

func newTop(limit int) *top { return &top{limit: limit} }

func (t *top) add(h search.Hit) {
	if len(t.heap) < t.limit {
		t.heap = append(t.heap, h)
		for i := len(t.heap) - 1; i > 0; {
			parent := (i - 1) / 2
			if !better(t.heap[parent], t.heap[i]) {
				break
			}
			t.heap[parent], t.heap[i] = t.heap[i], t.heap[parent]
			i = parent
		}
		return
	}
	if !better(h, t.heap[0]) {
		return
	}
	t.heap[0] = h
	for i := 0; ; {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(t.heap) && better(t.heap[worst], t.heap[l]) {
			worst = l
		}
		if r < len(t.heap) && better(t.heap[worst], t.heap[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		t.heap[i], t.heap[worst] = t.heap[worst], t.heap[i]
		i = worst
	}
}

// sorted returns the hits kept, best first, or nil when there are none.
func (t *top) sorted() []search.Hit {
	if len(t.heap) == 0 {
		return nil
	}
	slices.SortFunc(t.heap, func(a, b search.Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return t.heap
}

package search_test

import (
	"flag"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

var tune = flag.Bool("search.tune", false, "run TestTune, which reports how the BM25F parameters were chosen")

// TestTune is how defaultRanking was chosen (docs/benchmarks.md, "Tool search index"): variants of it on the whole
// set, then coordinate ascent on each half of the queries, from the first hand-set weights and from the default,
// reported on the other half, which it never saw. It asserts nothing. Run it with:
//
//	go test -run TestTune -v ./routing/search -args -search.tune
func TestTune(t *testing.T) {
	if !*tune {
		t.Skip("-search.tune not set")
	}
	all := evalset.Queries()
	var halves [2][]evalset.Query
	for i, q := range all {
		halves[i%2] = append(halves[i%2], q)
	}
	base := search.Build(evalset.Docs())
	eval := func(r search.Ranking, qs []evalset.Query) evalset.Result {
		ix := base.Reranked(r)
		return evalset.Evaluate(qs, func(q string) []string { return names(ix.Search(q, 10, nil)) })
	}

	def := search.DefaultRanking()
	variants := []struct {
		name string
		edit func(*search.Ranking)
	}{
		{"default", func(*search.Ranking) {}},
		{"all weights 1", func(r *search.Ranking) { r.Weights = [search.NumFields]float64{1, 1, 1, 1, 1, 1, 1} }},
		{"all weights 1, all b 0.75", func(r *search.Ranking) {
			r.Weights = [search.NumFields]float64{1, 1, 1, 1, 1, 1, 1}
			r.B = [search.NumFields]float64{0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75}
		}},
		{"name and description only", func(r *search.Ranking) { r.Weights = [search.NumFields]float64{3, 0, 1, 0, 0, 0, 0} }},
		{"no parameters", func(r *search.Ranking) { r.Weights[3], r.Weights[4] = 0, 0 }},
		{"no upstream, no instructions", func(r *search.Ranking) { r.Weights[5], r.Weights[6] = 0, 0 }},
		{"name weight 1", func(r *search.Ranking) { r.Weights[0] = 1 }},
		{"name weight 7", func(r *search.Ranking) { r.Weights[0] = 7 }},
		{"k1 2", func(r *search.Ranking) { r.K1 = 2 }},
		{"name 5, name b 1", func(r *search.Ranking) { r.Weights[0], r.B[0] = 5, 1 }},
		{"name 7, name b 1", func(r *search.Ranking) { r.Weights[0], r.B[0] = 7, 1 }},
		{"name 5, name b 1, k1 2", func(r *search.Ranking) { r.Weights[0], r.B[0], r.K1 = 5, 1, 2 }},
		{"name 7, name b 1, k1 2", func(r *search.Ranking) { r.Weights[0], r.B[0], r.K1 = 7, 1, 2 }},
		{"name 5, name b 0.75", func(r *search.Ranking) { r.Weights[0], r.B[0] = 5, 0.75 }},
		{"k1 0.75", func(r *search.Ranking) { r.K1 = 0.75 }},
	}
	for _, v := range variants {
		r := def
		v.edit(&r)
		t.Logf("%-30s %v", v.name, eval(r, all))
	}

	objective := func(r search.Ranking, qs []evalset.Query) float64 {
		res := eval(r, qs)
		return res.Recall5 + res.MRR
	}
	weights := []float64{0, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 7}
	bs := []float64{0, 0.25, 0.5, 0.75, 0.9, 1}
	k1s := []float64{0.5, 0.75, 0.9, 1.2, 1.5, 2, 3}
	handSet := def // the first weights, set by hand
	handSet.Weights[0], handSet.B[0] = 3, 0.3
	t.Logf("%-30s %v", "hand-set (name 3, name b 0.3)", eval(handSet, all))
	for i := range 4 {
		train, test := i%2, 1-i%2
		from, r := "hand-set", handSet
		if i >= 2 {
			from, r = "default", def
		}
		for range 3 {
			for f := range search.NumFields {
				ascend(&r, &r.Weights[f], weights, func(r search.Ranking) float64 { return objective(r, halves[train]) })
				ascend(&r, &r.B[f], bs, func(r search.Ranking) float64 { return objective(r, halves[train]) })
			}
			ascend(&r, &r.K1, k1s, func(r search.Ranking) float64 { return objective(r, halves[train]) })
		}
		t.Logf("from %s, tuned on half %d: %+v", from, train, r)
		t.Logf("  hand-set: train %v | held out %v", eval(handSet, halves[train]), eval(handSet, halves[test]))
		t.Logf("  default:  train %v | held out %v", eval(def, halves[train]), eval(def, halves[test]))
		t.Logf("  tuned:    train %v | held out %v", eval(r, halves[train]), eval(r, halves[test]))
	}
}

// ascend sets *p, a parameter of *r, to the value of vs that scores best, keeping the current value unless
// another scores higher.
func ascend(r *search.Ranking, p *float64, vs []float64, score func(search.Ranking) float64) {
	top := score(*r)
	cur := *p
	for _, v := range vs {
		*p = v
		if s := score(*r); s > top+1e-9 {
			top, cur = s, v
		}
	}
	*p = cur
}

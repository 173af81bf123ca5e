package search_test

import (
	"flag"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

var blindTune = flag.String("search.blindtune", "", "run TestBlindTune: \"table\" (aggregates of both splits), "+
	"\"misses\" or \"equivmisses\" (the tuned split's misses, strict or equivalent), \"cv\" (5-fold cross-validation "+
	"of the BM25F parameters on the tuned split), \"action\", \"question\", \"namecover\" or \"coordname\" (the same for those), "+
	"\"ablate\" (each part taken out), or one parameter's sweep (filler, expand, coord, upstream)")

// TestBlindTune is how the ranking is fitted on the blind queries (issue 34): on the tuned split only. It prints the
// held-out split's aggregate figures and never its queries. It asserts nothing. Run it with:
//
//	go test -run TestBlindTune -v ./routing/search -args -search.blindtune=table|misses|cv|action|ablate|...
func TestBlindTune(t *testing.T) {
	if *blindTune == "" {
		t.Skip("-search.blindtune not set")
	}
	all := evalset.BlindQueries()
	tuned, held := evalset.Split(all, false), evalset.Split(all, true)
	base := search.Build(evalset.CatalogDocs())
	eval := func(r search.Ranking, qs []evalset.BlindQuery) evalset.BlindResult {
		ix := base.Reranked(r)
		return evalset.EvaluateBlind(qs, func(q string) []string { return names(ix.Search(q, 10, nil)) })
	}
	row := func(name string, r evalset.BlindResult) string {
		return fmt.Sprintf("%-10s strict %.3f/%.3f/%.3f equiv %.3f/%.3f/%.3f", name, r.Strict.Recall1, r.Strict.Recall5,
			r.Strict.Recall10, r.Equivalent.Recall1, r.Equivalent.Recall5, r.Equivalent.Recall10)
	}
	def := search.DefaultRanking()
	switch *blindTune {
	case "table":
		rt, rh := eval(def, tuned), eval(def, held)
		t.Logf("\n%s\n%s\ngap strict@5 %+.3f", row("tuned", rt), row("held-out", rh), rt.Strict.Recall5-rh.Strict.Recall5)
	case "filler":
		for _, f := range []float64{0, 0.1, 0.2, 0.3, 0.5, 0.75, 1} {
			r := def
			r.Filler = f
			t.Log(row(fmt.Sprint(f), eval(r, tuned)))
		}
	case "expand":
		for _, f := range []float64{0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1} {
			r := def
			r.Expand = f
			t.Log(row(fmt.Sprint(f), eval(r, tuned)))
		}
	case "coord":
		for _, f := range []float64{0, 0.25, 0.5, 0.75, 1, 1.5, 2} {
			r := def
			r.Coord = f
			t.Log(row(fmt.Sprint(f), eval(r, tuned)))
		}
	case "upstream":
		for _, f := range []float64{0.5, 1, 2, 3, 4, 5, 7} {
			r := def
			r.Weights[5] = f
			t.Log(row(fmt.Sprint(f), eval(r, tuned)))
		}
	case "ablate": // what each part adds, in aggregate on both splits
		for _, v := range []struct {
			name string
			edit func(*search.Ranking)
		}{{"all", func(*search.Ranking) {}}, {"no intent", func(r *search.Ranking) { r.Expand = 0 }},
			{"no filler", func(r *search.Ranking) { r.Filler = 1 }}, {"no coord", func(r *search.Ranking) { r.Coord = 0 }},
			{"no action", func(r *search.Ranking) { r.Action = 1 }}, {"no question", func(r *search.Ranking) { r.Question = false }},
			{"no name cover", func(r *search.Ranking) { r.NameCover = 0 }}} {
			r := def
			v.edit(&r)
			t.Logf("%s\n%s\n%s", v.name, row("tuned", eval(r, tuned)), row("held-out", eval(r, held)))
		}
	case "action": // the factor for a tool whose name names another kind of action than the query
		var grid []search.Ranking
		for _, f := range []float64{1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3} {
			r := def
			r.Action = f
			t.Log(row(fmt.Sprint(f), eval(r, tuned)))
			grid = append(grid, r)
		}
		gridCV(t, def, grid, tuned, eval, row)
	case "question": // a question that names no action asks to read, with the action factor refitted
		var grid []search.Ranking
		for _, q := range []bool{false, true} {
			for _, f := range []float64{1, 0.9, 0.8, 0.7, 0.6, 0.5} {
				r := def
				r.Question, r.Action = q, f
				t.Log(row(fmt.Sprint(q, f), eval(r, tuned)))
				grid = append(grid, r)
			}
		}
		gridCV(t, def, grid, tuned, eval, row)
	case "namecover":
		var grid []search.Ranking
		for _, g := range []float64{0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 1} {
			r := def
			r.NameCover = g
			t.Log(row(fmt.Sprint(g), eval(r, tuned)))
			grid = append(grid, r)
		}
		gridCV(t, def, grid, tuned, eval, row)
	case "coordname": // coordination from both sides together
		var grid []search.Ranking
		for _, c := range []float64{0, 0.25, 0.5} {
			for _, g := range []float64{0.25, 0.5, 0.75} {
				for _, a := range []float64{0.6, 0.8} {
					r := def
					r.Coord, r.NameCover, r.Action = c, g, a
					t.Log(row(fmt.Sprint(c, g, a), eval(r, tuned)))
					grid = append(grid, r)
				}
			}
		}
		gridCV(t, def, grid, tuned, eval, row)
	case "equivmisses":
		r := eval(def, tuned)
		for _, m := range r.Equivalent.Misses {
			t.Logf("tuned miss (rank %d): %q want %v got %v", m.Rank, m.Query.Text, m.Query.Want[:min(3, len(m.Query.Want))], m.Top[:min(5, len(m.Top))])
		}
	case "misses":
		r := eval(def, tuned)
		t.Log(row("tuned", r))
		for _, m := range r.Strict.Misses {
			t.Logf("tuned miss (rank %d): %q want %v got %v", m.Rank, m.Query.Text, m.Query.Want, m.Top[:min(5, len(m.Top))])
		}
	case "cv":
		const k = 5
		var folds [k][]evalset.BlindQuery
		for _, q := range tuned {
			h := fnv.New32a()
			h.Write([]byte("fold" + q.ID))
			folds[h.Sum32()%k] = append(folds[h.Sum32()%k], q)
		}
		objective := func(r search.Ranking, qs []evalset.BlindQuery) float64 {
			res := eval(r, qs)
			return res.Strict.Recall5 + res.Strict.MRR
		}
		weights := []float64{0, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 7, 10}
		bs := []float64{0, 0.25, 0.5, 0.75, 0.9, 1}
		k1s := []float64{0.5, 0.75, 0.9, 1.2, 1.5, 2, 3}
		var sumDef, sumFit float64
		for i := range k {
			var train []evalset.BlindQuery
			for j := range k {
				if j != i {
					train = append(train, folds[j]...)
				}
			}
			r := def
			score := func(r search.Ranking) float64 { return objective(r, train) }
			for range 2 {
				for f := range search.NumFields {
					ascend(&r, &r.Weights[f], weights, score)
					ascend(&r, &r.B[f], bs, score)
				}
				ascend(&r, &r.K1, k1s, score)
			}
			d, fit := eval(def, folds[i]).Strict.Recall5, eval(r, folds[i]).Strict.Recall5
			sumDef += d
			sumFit += fit
			t.Logf("fold %d: %+v\n  default %.3f fitted %.3f on the fold", i, r, d, fit)
		}
		t.Logf("mean over folds: default %.3f fitted %.3f", sumDef/k, sumFit/k)
	case "fit": // the same ascent on the whole tuned split, for the candidate the cross-validation vouches for
		r := def
		score := func(r search.Ranking) float64 {
			res := eval(r, tuned)
			return res.Strict.Recall5 + res.Strict.MRR
		}
		for range 2 {
			for f := range search.NumFields {
				ascend(&r, &r.Weights[f], []float64{0, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 7, 10}, score)
				ascend(&r, &r.B[f], []float64{0, 0.25, 0.5, 0.75, 0.9, 1}, score)
			}
			ascend(&r, &r.K1, []float64{0.5, 0.75, 0.9, 1.2, 1.5, 2, 3}, score)
		}
		t.Logf("%+v\n%s\n%s", r, row("default", eval(def, tuned)), row("fitted", eval(r, tuned)))
	}
}

// gridCV is a 5-fold cross-validation on the tuned split of choosing the best of grid (by recall@5 plus MRR, strict)
// on four folds: it logs, per fold, the choice and its recall@5 on the fifth beside def's, then the choice on the
// whole tuned split beside def on both splits.
func gridCV(t *testing.T, def search.Ranking, grid []search.Ranking, tuned []evalset.BlindQuery,
	eval func(search.Ranking, []evalset.BlindQuery) evalset.BlindResult, row func(string, evalset.BlindResult) string) {
	const k = 5
	var folds [k][]evalset.BlindQuery
	for _, q := range tuned {
		h := fnv.New32a()
		h.Write([]byte("fold" + q.ID))
		folds[h.Sum32()%k] = append(folds[h.Sum32()%k], q)
	}
	best := func(qs []evalset.BlindQuery) search.Ranking {
		top, pick := -1.0, def
		for _, r := range grid {
			res := eval(r, qs)
			if s := res.Strict.Recall5 + res.Strict.MRR; s > top+1e-9 {
				top, pick = s, r
			}
		}
		return pick
	}
	var sumDef, sumFit float64
	for i := range k {
		var train []evalset.BlindQuery
		for j := range k {
			if j != i {
				train = append(train, folds[j]...)
			}
		}
		r := best(train)
		d, fit := eval(def, folds[i]).Strict.Recall5, eval(r, folds[i]).Strict.Recall5
		sumDef += d
		sumFit += fit
		t.Logf("fold %d: %+v; left-out fold default %.3f fitted %.3f", i, r, d, fit)
	}
	t.Logf("mean over left-out folds: default %.3f fitted %.3f", sumDef/k, sumFit/k)
	r := best(tuned)
	t.Logf("on the whole tuned split: %+v\n%s\n%s", r, row("default", eval(def, tuned)), row("fitted", eval(r, tuned)))
}

package search_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

// TestBlindRecall (issue 34) measures the ranking on the blind queries over the large catalog, tuned and held-out
// split side by side, by the strict label and as a person would score it (any equivalent tool), and per style. The
// floors sit just under the measured held-out figures, so that a change that loses ground on queries nobody tuned
// on fails; the gap between the splits is reported beside them (issue 34 rejects a change that widens it).
func TestBlindRecall(t *testing.T) {
	ix := search.Build(evalset.CatalogDocs())
	rank := func(q string) []string { return names(ix.Search(q, 10, nil)) }
	all := evalset.BlindQueries()
	tuned, held := evalset.Split(all, false), evalset.Split(all, true)
	rt, rh := evalset.EvaluateBlind(tuned, rank), evalset.EvaluateBlind(held, rank)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-28s %-10s %8s %8s %8s %6s\n", "split", "label", "@1", "@5", "@10", "n")
	row := func(split, label string, r evalset.Result) {
		fmt.Fprintf(&b, "%-28s %-10s %8.3f %8.3f %8.3f %6d\n", split, label, r.Recall1, r.Recall5, r.Recall10, r.Queries)
	}
	row("tuned", "strict", rt.Strict)
	row("tuned", "equivalent", rt.Equivalent)
	row("held-out", "strict", rh.Strict)
	row("held-out", "equivalent", rh.Equivalent)
	for _, style := range []string{evalset.StyleUser, evalset.StyleKeyword, evalset.StyleTask} {
		var qs []evalset.BlindQuery
		for _, q := range held {
			if q.Style == style {
				qs = append(qs, q)
			}
		}
		r := evalset.EvaluateBlind(qs, rank)
		row("held-out, "+style, "strict", r.Strict)
	}
	fmt.Fprintf(&b, "gap tuned - held-out, strict recall@5: %+.3f", rt.Strict.Recall5-rh.Strict.Recall5)
	t.Log(b.String())
	if testing.Verbose() {
		for _, m := range rh.Strict.Misses {
			t.Logf("held-out miss (rank %d): %q want %v got %v", m.Rank, m.Query.Text, m.Query.Want, m.Top)
		}
	}
	// The first measurement (package search as issue 16 left it): held-out strict recall@5 0.723, equivalent 0.796;
	// with filler words down-weighted, the intent table, coordination and the weights refitted (issue 34): 0.743,
	// 0.820; with the action factor and the question rule, the same at @5 and a point more at @1 and @10; with the
	// name's share (ranking.NameCover) at the power cross-validation chose, 0.5: 0.777, 0.850; at 0.25, which
	// TestE2ESearch's queries and TestRecall's set (both unseen by this tuning) did better with: 0.767, 0.845.
	const minHeld5, minHeldEquiv5 = 0.76, 0.84
	if rh.Strict.Recall5 < minHeld5 {
		t.Errorf("held-out strict recall@5 = %.3f, want ≥ %.3f", rh.Strict.Recall5, minHeld5)
	}
	if rh.Equivalent.Recall5 < minHeldEquiv5 {
		t.Errorf("held-out equivalent recall@5 = %.3f, want ≥ %.3f", rh.Equivalent.Recall5, minHeldEquiv5)
	}
}

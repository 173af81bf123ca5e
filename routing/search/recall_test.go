package search_test

import (
	"slices"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

func names(hits []search.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

// TestRecall is the regression guard of the ranking on the evaluation set (docs/benchmarks.md, "Tool search
// index"): the floors sit just under the measured values, so that losing three of the 296 queries from the first
// five, or a few places of rank, fails. They were set after the second round of queries (147 → 296) had been
// written and added, from its first measurement (recall@5 0.885, MRR 0.760; before it, 0.952 and 0.851 on the
// first 147, on which the weights had been tuned).
func TestRecall(t *testing.T) {
	const minRecall5, minMRR = 0.877, 0.75
	ix := search.Build(evalset.Docs())
	r := evalset.Evaluate(evalset.Queries(), func(q string) []string { return names(ix.Search(q, 10, nil)) })
	t.Log(r)
	for _, m := range r.Misses {
		t.Logf("not in the first 5 (rank %d): %q want %v got %v", m.Rank, m.Query.Text, m.Query.Want, m.Top)
	}
	if r.Recall5 < minRecall5 {
		t.Errorf("recall@5 = %.3f, want ≥ %.3f", r.Recall5, minRecall5)
	}
	if r.MRR < minMRR {
		t.Errorf("MRR = %.3f, want ≥ %.3f", r.MRR, minMRR)
	}
}

// TestEvalSet checks the set itself: every labelled tool exists, names are unique, and it is as large as the
// issue asks.
func TestEvalSet(t *testing.T) {
	docs := evalset.Docs()
	seen := map[string]bool{}
	for _, d := range docs {
		if seen[d.Name] {
			t.Errorf("duplicate tool %q", d.Name)
		}
		seen[d.Name] = true
	}
	servers := evalset.Servers()
	if len(docs) < 300 || len(servers) < 30 {
		t.Errorf("%d tools from %d servers, want ≥ 300 from ≥ 30", len(docs), len(servers))
	}
	qs := evalset.Queries()
	if len(qs) < 200 {
		t.Errorf("%d queries, want ≥ 200", len(qs))
	}
	for _, q := range qs {
		for _, w := range q.Want {
			if !seen[w] {
				t.Errorf("query %q: no tool %q", q.Text, w)
			}
		}
	}
	got := evalset.Synthesize(1000)
	copied := func(d search.Doc) bool { return d.Name == "github3__create_issue" && d.Upstream == "github3" }
	if len(got) != 1000 || !slices.ContainsFunc(got, copied) {
		t.Errorf("Synthesize(1000): %d docs", len(got))
	}
}

func TestEvaluate(t *testing.T) {
	qs := []evalset.Query{
		{Text: "a", Want: []string{"x"}},
		{Text: "b", Want: []string{"y", "z"}},
		{Text: "c", Want: []string{"w"}},
	}
	rank := map[string][]string{"a": {"x"}, "b": {"1", "2", "3", "4", "5", "z"}, "c": {"1"}}
	r := evalset.Evaluate(qs, func(q string) []string { return rank[q] })
	if r.Recall1 != 1.0/3 || r.Recall5 != 1.0/3 || r.Recall10 != 2.0/3 || r.MRR != (1+1.0/6)/3 || len(r.Misses) != 2 {
		t.Errorf("Evaluate = %+v", r)
	}
}

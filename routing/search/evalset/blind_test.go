package evalset_test

import (
	"slices"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

// TestBlindSet checks the blind queries (issue 34): as many as the issue asks, in its three styles, each written
// for a server of the catalog and labelled with tools that exist, strict ones among the equivalent; the held-out
// split is about a third.
func TestBlindSet(t *testing.T) {
	tools := map[string]bool{}
	servers := map[string]bool{}
	for _, s := range evalset.Catalog() {
		servers[s.Upstream] = true
		for _, tool := range s.Tools {
			tools[s.Upstream+"__"+tool.Name] = true
		}
	}
	qs := evalset.BlindQueries()
	if n := len(qs) + evalset.BlindUnanswerable(); n < 600 {
		t.Errorf("%d blind queries, want ≥ 600", n)
	}
	styles, held := map[string]int{}, 0
	for _, q := range qs {
		styles[q.Style]++
		if q.HeldOut {
			held++
		}
		if !servers[q.Server] {
			t.Errorf("%s: written for %q, not a server of the catalog", q.ID, q.Server)
		}
		for _, n := range q.Equivalent {
			if !tools[n] {
				t.Errorf("%s: labelled with %q, not a tool of the catalog", q.ID, n)
			}
		}
		for _, n := range q.Strict {
			if !slices.Contains(q.Equivalent, n) {
				t.Errorf("%s: strict %q is not among the equivalent", q.ID, n)
			}
		}
	}
	for _, s := range []string{evalset.StyleUser, evalset.StyleKeyword, evalset.StyleTask} {
		if styles[s] < len(qs)/5 {
			t.Errorf("%d %s queries of %d", styles[s], s, len(qs))
		}
	}
	if len(styles) != 3 {
		t.Errorf("styles %v, want user, keyword and task only", styles)
	}
	if share := float64(held) / float64(len(qs)); share < 0.25 || share > 0.42 {
		t.Errorf("held-out share %.2f, want about a third", share)
	}
}

package search_test

import (
	"math"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
)

// TestQueryUnderstanding checks issue 34's query handling on a small catalog: a filler word ("latest") does not let
// the tool whose name has it outrank the one the intent asks for, an intent word ("news", "rain") finds the tool
// named by capability, and each hit says why it matched.
func TestQueryUnderstanding(t *testing.T) {
	ix := search.Build([]search.Doc{
		{Name: "gh__get_latest_release", Description: "Get the latest release of a repository"},
		{Name: "web__search", Description: "Search the web for pages and recent articles"},
		{Name: "wx__get_forecast", Description: "Weather forecast for a city"},
		{Name: "fs__move_file", Description: "Move a file to another path"},
	})
	for _, tc := range []struct {
		query, top, reason string
	}{
		{"the latest news about elections in Brazil", "web__search", "name: search (for news), web (for news)"},
		{"is it going to rain in Chicago tomorrow?", "wx__get_forecast", "name: forecast (for rain); description: weather (for rain)"},
		{"rename old.txt to new.txt", "fs__move_file", "name: move (for rename)"},
	} {
		hits := ix.Search(tc.query, 3, nil)
		if len(hits) == 0 || hits[0].Name != tc.top || hits[0].Reason != tc.reason {
			t.Errorf("%q: got %+v, want %s first because %q", tc.query, hits, tc.top, tc.reason)
		}
	}
}

// TestActionConflict checks the action factor (actionTable): of two tools on the same object, the one whose name's
// verb is of the kind the query asks for wins, also when the query only asks a question, and a query that names no
// action leaves the ranking alone.
func TestActionConflict(t *testing.T) {
	ix := search.Build([]search.Doc{
		{Name: "flags__create_flag", Description: "Create a feature flag"},
		{Name: "flags__update_flag", Description: "Update the targeting, the rollout or the state of a feature flag"},
		{Name: "flags__delete_flag", Description: "Delete a feature flag"},
		{Name: "flags__list_flags", Description: "List the feature flags of a project, with their state and targeting"},
	})
	for _, tc := range []struct{ query, top string }{
		{"turn off the checkout feature flag", "flags__update_flag"},
		{"what feature flags are there?", "flags__list_flags"},
		{"feature flag", "flags__create_flag"}, // no action: the shortest text wins, as in plain BM25F
	} {
		if hits := ix.Search(tc.query, 4, nil); len(hits) == 0 || hits[0].Name != tc.top {
			t.Errorf("%q: got %v, want %s first", tc.query, names(hits), tc.top)
		}
	}
	// Without the factor the first query is lost to the tool with the shorter text, which is why the factor exists.
	r := search.DefaultRanking()
	r.Action = 1
	plain := search.BuildRanked([]search.Doc{
		{Name: "flags__create_flag", Description: "Create a feature flag"},
		{Name: "flags__update_flag", Description: "Update the targeting, the rollout or the state of a feature flag"},
	}, r)
	if hits := plain.Search("turn off the checkout feature flag", 2, nil); len(hits) == 0 || hits[0].Name != "flags__create_flag" {
		t.Errorf("without the action factor: %v, want create_flag first (the test would not tell)", names(hits))
	}
}

// TestNameCover checks coordination from the tool's side (ranking.NameCover): each score is scaled by the fourth
// root of the smoothed share of its name's words the query has, (matched+1)/(words+1), where the words that name an
// action (get) and repeats are not counted, and the upstream's prefix is.
func TestNameCover(t *testing.T) {
	docs := []search.Doc{
		{Name: "xy__alpha", Description: "alpha"},              // xy, alpha: 1 of 2
		{Name: "xy__alpha_beta", Description: "alpha"},         // xy, alpha, beta: 1 of 3
		{Name: "xy__get_alpha_alpha", Description: "alpha"},    // xy, alpha (get names an action): 1 of 2
		{Name: "xy__gamma", Description: "alpha and others"},   // found by its description: 0 of 2
		{Name: "xy__alpha_beta_gamma", Description: "nothing"}, // 2 of 4 for "alpha gamma"
	}
	off := search.DefaultRanking()
	off.NameCover = 0
	with, without := search.Build(docs), search.BuildRanked(docs, off)
	for _, tc := range []struct {
		query string
		want  map[string]float64 // name → the factor
	}{
		{"alpha", map[string]float64{"xy__alpha": 2.0 / 3, "xy__alpha_beta": 2.0 / 4, "xy__get_alpha_alpha": 2.0 / 3, "xy__gamma": 1.0 / 3}},
		{"alpha gamma", map[string]float64{"xy__alpha_beta_gamma": 3.0 / 5}},
	} {
		base := map[string]float64{}
		for _, h := range without.Search(tc.query, 10, nil) {
			base[h.Name] = h.Score
		}
		got := map[string]float64{}
		for _, h := range with.Search(tc.query, 10, nil) {
			got[h.Name] = h.Score
		}
		for name, share := range tc.want {
			if got[name] == 0 || base[name] == 0 {
				t.Errorf("%q: %s not found", tc.query, name)
				continue
			}
			if ratio, want := got[name]/base[name], math.Pow(share, 0.25); math.Abs(ratio-want) > 1e-9 {
				t.Errorf("%q: %s scaled by %.4f, want %.4f", tc.query, name, ratio, want)
			}
		}
	}
}

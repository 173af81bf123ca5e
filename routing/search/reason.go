package search

import "strings"

// fieldNames are the fields as Hit.Reason names them.
var fieldNames = [numFields]string{
	fieldName:             "name",
	fieldTitle:            "title",
	fieldDescription:      "description",
	fieldParamName:        "parameters",
	fieldParamDescription: "parameter descriptions",
	fieldUpstream:         "server",
	fieldInstructions:     "server instructions",
}

// explain sets each hit's Reason: each matched term once, under the most telling field it matched. It marks the hits' slots in state (which the caller clears) and reads the
// postings of the query's terms once more, so that it costs one pass without arithmetic over what the search read.
func (ix *Index) explain(hits []Hit, terms []queryTerm, state []int8) {
	if len(hits) == 0 {
		return
	}
	at := make(map[int32]int, len(hits)) // slot → its hit
	for i, h := range hits {
		slot := ix.byName[h.Name]
		at[slot] = i
		state[slot] = 2
	}
	matched := make([][numFields][]int, len(hits)) // hit → field → the terms it matched there
	for ti, qt := range terms {
		for _, p := range ix.postings[qt.term] {
			if state[p.doc] != 2 {
				continue
			}
			i := at[p.doc]
			for f, c := range p.freqs {
				if c != 0 { // the most telling field only, so that the line stays short
					matched[i][f] = append(matched[i][f], ti)
					break
				}
			}
		}
	}
	var b strings.Builder
	for i := range hits {
		b.Reset()
		for f, ts := range matched[i] {
			if len(ts) == 0 {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(fieldNames[f])
			b.WriteString(": ")
			for j, ti := range ts {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(terms[ti].word)
				if terms[ti].from != "" {
					b.WriteString(" (for ")
					b.WriteString(terms[ti].from)
					b.WriteString(")")
				}
			}
		}
		hits[i].Reason = b.String()
	}
}

package search

import (
	"slices"
	"strings"
)

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
	slots := make([]int32, len(hits))
	for i, h := range hits {
		slots[i] = ix.byName[h.Name]
		state[slots[i]] = 2
	}
	// field[i*len(terms)+t] is 1 + the most telling field in which hit i matched term t, 0 when it did not.
	field := make([]int8, len(hits)*len(terms))
	for ti, qt := range terms {
		for _, p := range ix.postings[qt.term] {
			if state[p.doc] != 2 {
				continue
			}
			i := slices.Index(slots, p.doc)
			for f, c := range p.freqs {
				if c != 0 {
					field[i*len(terms)+ti] = int8(f + 1)
					break
				}
			}
		}
	}
	var b strings.Builder
	for i := range hits {
		b.Reset()
		row := field[i*len(terms) : (i+1)*len(terms)]
		for f := range numFields {
			first := true
			for ti, g := range row {
				if int(g) != f+1 {
					continue
				}
				switch {
				case first && b.Len() > 0:
					b.WriteString("; ")
				case !first:
					b.WriteString(", ")
				}
				if first {
					b.WriteString(fieldNames[f])
					b.WriteString(": ")
					first = false
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

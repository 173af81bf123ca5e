package search

import "math"

// reweigh scales the scores of the allowed docs of seen once every term has been added: by coordination (the
// share of the query's weight total a doc matched, ranking.Coord), by the share of its name's words the query has
// (ranking.NameCover), and for a conflict between the kinds of action its name and the query name
// (ranking.Action, with acts the query's kinds).
//
// The name's share is coordination from the tool's side. A tool's name says the whole of what it does; a query
// that has all its words ("list plane projects" for plane__get_projects, once the verb is set aside) asks for that
// tool, while a longer name that shares as many words ("plane__list_project_issues") does something more specific
// that the query did not ask for. The share is smoothed ((matched+1)/(words+1)), so that a tool found by its
// description alone is scaled down, not out; the words that name an action are left out of both counts, since the
// action factor judges them, and so are repeats. The upstream's prefix counts as part of the name, as the client
// sees it.
func (ix *Index) reweigh(sc *scratch, seen []int32, total float64, acts uint8) {
	scores, state := sc.scores, sc.state
	c, g, f := ix.rank.Coord, ix.rank.NameCover, ix.rank.Action
	if f == 1 {
		acts = 0
	}
	for _, slot := range seen {
		if state[slot] != 1 {
			continue
		}
		d := ix.docs[slot]
		if c != 0 && sc.cover[slot] < total {
			if c == 0.25 { // the default, at a tenth of Pow's cost
				scores[slot] *= math.Sqrt(math.Sqrt(sc.cover[slot] / total))
			} else {
				scores[slot] *= math.Pow(sc.cover[slot]/total, c)
			}
		}
		if g != 0 && d.nameN > 0 {
			share := float64(min(sc.named[slot], d.nameN)+1) / float64(d.nameN+1)
			if g == 0.25 { // the default, at a tenth of Pow's cost
				scores[slot] *= math.Sqrt(math.Sqrt(share))
			} else {
				scores[slot] *= math.Pow(share, g)
			}
		}
		if conflict(d.acts, acts) {
			scores[slot] *= f
		}
	}
}

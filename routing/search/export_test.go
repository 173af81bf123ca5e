package search

// Ranking exposes the BM25F parameters to the evaluation in package search_test.
type Ranking = ranking

// DefaultRanking is the ranking Build uses.
func DefaultRanking() Ranking { return defaultRanking() }

// BuildRanked is Build with other parameters.
func BuildRanked(docs []Doc, r Ranking) *Index { return buildRanked(docs, r) }

// NumFields is the number of weighted fields.
const NumFields = numFields

// Reranked returns ix ranking with r; the two share everything else.
func (ix *Index) Reranked(r Ranking) *Index {
	c := *ix
	c.rank = r
	return &c
}

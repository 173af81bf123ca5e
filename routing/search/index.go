package search

import (
	"maps"
	"math"
	"slices"
	"sync"
)

// Doc is one searchable tool, as one endpoint's clients see it: after renames and description overrides, so that
// what is searched is what is shown.
type Doc struct {
	// Name is the client-visible tool name, the name tools/call accepts. It is the doc's key in an Index.
	Name         string
	Title        string
	Description  string
	Params       []Param
	Upstream     string // the upstream's name
	Instructions string // the upstream's instructions from its initialize result
}

// Param is one parameter of a tool's input schema.
type Param struct {
	Name        string
	Description string
}

// Hit is one search result. Score is only comparable within one Search.
type Hit struct {
	Name  string
	Score float64
	// Reason says in one line which of the query's words matched which field of the tool, each word under the most
	// telling field it matched: `name: forecast; description: rain, city`. A word the query did not have, found by its intent (intentTable),
	// names the query's word it came from: `name: weather (for umbrella)`.
	Reason string
}

// The fields of a Doc, from the most telling to the least.
const (
	fieldName = iota
	fieldTitle
	fieldDescription
	fieldParamName
	fieldParamDescription
	fieldUpstream
	fieldInstructions
	numFields
)

// ranking holds the BM25F parameters. The fields are exported for export_test.go, which lets the evaluation
// try others.
type ranking struct {
	Weights [numFields]float64 // each field's term frequencies count this many times
	B       [numFields]float64 // length normalisation per field: 0 none, 1 full
	K1      float64            // saturation of the combined term frequency
	// Filler is how much a query's filler words count (fillerWord: "latest", "current", "want"), against 1 for
	// the others: they say when or how politely, not what, and must not let a tool whose name has them win.
	Filler float64
	// Expand is how much the words a query's intent words expand to (intentTable) count.
	Expand float64
	// Coord scales a doc's score by the share of the query's weight it matched, to this power (0: not at all), so
	// that a tool matching several of a query's words beats one matching one word many times.
	Coord float64
	// Action scales the score of a tool whose name names a kind of action (actionTable) when the query names
	// others and not that one: delete_flag for "turn off the flag" (1: not at all).
	Action float64
	// Question makes a question that names no action ("what meetings do I have") ask to read (see asks).
	Question bool
	// NameCover scales a doc's score by the share of its name's words that the query has, to this power (0: not
	// at all): coordination seen from the tool's side (see reweigh). The blind set's cross-validation chose 0.5;
	// 0.25 gives up a point of its recall@5 and wins on material that tuning never saw (TestE2ESearch's queries,
	// TestRecall's set: 0.899 → 0.929 at @5), where 0.5 let a name word outweigh three description words.
	NameCover float64
}

// defaultRanking is the measured choice (docs/benchmarks.md, "Tool search index"): fitted by coordinate ascent on
// the blind queries' tuned split, after a 5-fold cross-validation on that split showed the ascent generalises
// (TestBlindTune; TestTune has the first tuning, on the older set). The name dominates, since tool names are short
// and say what the tool does, and it is fully length-normalised, so that a query's words weigh more in a short name
// than in a long one; the upstream's instructions count least, since every tool of an upstream shares them.
// Descriptions are normalised more than in plain BM25 (b 0.9): long descriptions mention many things in passing.
func defaultRanking() ranking {
	return ranking{
		Weights: [numFields]float64{
			fieldName:             7,
			fieldTitle:            0.5,
			fieldDescription:      0.75,
			fieldParamName:        0.5,
			fieldParamDescription: 0.5,
			fieldUpstream:         1,
			fieldInstructions:     0.1,
		},
		B: [numFields]float64{
			fieldName:             1,
			fieldTitle:            0.3,
			fieldDescription:      0.9,
			fieldParamName:        0.75,
			fieldParamDescription: 0.25,
			fieldUpstream:         0,
			fieldInstructions:     0.9,
		},
		K1:        1.5,
		Filler:    0.2,
		Expand:    0.6,
		Coord:     0.25,
		Action:    0.8,
		Question:  true,
		NameCover: 0.25,
	}
}

// freqs is a term's frequency in each field of one doc, saturating at 255 (BM25 saturates long before).
type freqs [numFields]uint8

// posting is one doc's occurrence of a term.
type posting struct {
	doc   int32 // the doc's slot in Index.docs
	freqs freqs
}

// doc is what an Index keeps of a Doc. Versions of an Index share the docs they have in common.
type doc struct {
	name  string
	lens  [numFields]int32 // terms per field, repeats included
	acts  uint8            // the kinds of action the name names (actionTable)
	nameN uint8            // the name's distinct terms that name no action (actionTable), for ranking.NameCover
	terms []string         // distinct terms, to find the doc's postings when it is removed
}

// Index is an immutable BM25F index of tools, safe for concurrent use. The zero value and a nil *Index are empty.
type Index struct {
	rank     ranking
	intents  intents // shared by every version of an index
	actions  actions // likewise
	docs     []*doc  // by slot; nil for a free slot
	free     []int32 // free slots, reused before docs grows
	byName   map[string]int32
	postings map[string][]posting // term → the docs that have it, in no order
	sumLen   [numFields]int64     // sum of lens over the docs, for the mean field lengths
	// scratch recycles the per-search arrays (one entry per slot), which at 10,000 tools would otherwise be
	// 90 KB of garbage per search.
	scratch *sync.Pool
}

// scratch is one search's accumulators, indexed by slot. Between searches every entry is zero.
type scratch struct {
	scores []float64
	cover  []float64 // the weight of the query's terms the doc has
	state  []int8    // 0 not seen, 1 allowed, -1 rejected
	named  []uint8   // how many of the query's terms that name no action are in the doc's name
	seen   []int32
}

// Build indexes docs. A name that occurs twice keeps its last doc.
func Build(docs []Doc) *Index {
	return buildRanked(docs, defaultRanking())
}

func buildRanked(docs []Doc, r ranking) *Index {
	a := newAnalyzer()
	ix := &Index{rank: r, intents: newIntents(a), actions: newActions(a), byName: make(map[string]int32, len(docs)), postings: make(map[string][]posting),
		scratch: new(sync.Pool)}
	w := writer{ix: ix, b: newBuilder(a, ix.actions)}
	for _, d := range docs {
		w.upsert(d)
	}
	return ix
}

// Len is the number of docs in the index.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	return len(ix.byName)
}

// With returns a new index: ix without the docs named in remove, then with upsert added, each replacing the doc of
// its name if there is one. Only the docs in upsert are analysed, and only the posting lists of the terms they and
// the removed docs have are copied; everything else is shared with ix, which is unchanged and stays valid. Names
// that are not in ix are ignored in remove. The result ranks exactly as Build of the same docs would.
func (ix *Index) With(upsert []Doc, remove []string) *Index {
	if ix == nil {
		return Build(upsert)
	}
	if len(upsert) == 0 && len(remove) == 0 {
		return ix
	}
	nx := &Index{
		rank:     ix.rank,
		intents:  ix.intents,
		actions:  ix.actions,
		docs:     slices.Clone(ix.docs),
		free:     slices.Clone(ix.free),
		byName:   maps.Clone(ix.byName),
		postings: maps.Clone(ix.postings),
		sumLen:   ix.sumLen,
		scratch:  new(sync.Pool),
	}
	if nx.byName == nil { // the zero Index
		nx.byName = make(map[string]int32)
		nx.postings = make(map[string][]posting)
	}
	w := writer{ix: nx, b: newBuilder(newAnalyzer(), nx.actions), owned: make(map[string]bool)}
	for _, name := range remove {
		w.remove(name)
	}
	for _, d := range upsert {
		w.upsert(d)
	}
	return nx
}

// writer changes an index that no reader has seen yet.
type writer struct {
	ix *Index
	b  *builder
	// owned records the terms whose posting list this writer has copied, and so may change in place; the others
	// are shared with older versions. Nil when every list is the writer's own (Build).
	owned map[string]bool
}

func (w *writer) own(term string) bool {
	if w.owned == nil || w.owned[term] {
		return true
	}
	w.owned[term] = true
	return false
}

func (w *writer) remove(name string) {
	ix := w.ix
	slot, ok := ix.byName[name]
	if !ok {
		return
	}
	d := ix.docs[slot]
	for _, t := range d.terms {
		ps := ix.postings[t]
		i := slices.IndexFunc(ps, func(p posting) bool { return p.doc == slot })
		if i < 0 {
			continue // cannot happen: a doc's terms all have its posting
		}
		if len(ps) == 1 {
			delete(ix.postings, t)
			continue
		}
		if !w.own(t) {
			ps = slices.Clone(ps)
		}
		ps[i] = ps[len(ps)-1]
		ix.postings[t] = ps[:len(ps)-1]
	}
	for f := range numFields {
		ix.sumLen[f] -= int64(d.lens[f])
	}
	ix.docs[slot] = nil
	ix.free = append(ix.free, slot)
	delete(ix.byName, name)
}

func (w *writer) upsert(in Doc) {
	ix := w.ix
	w.remove(in.Name)
	d, entries := w.b.doc(in)
	var slot int32
	if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
		ix.docs[slot] = d
	} else {
		slot = int32(len(ix.docs))
		ix.docs = append(ix.docs, d)
	}
	ix.byName[in.Name] = slot
	for f := range numFields {
		ix.sumLen[f] += int64(d.lens[f])
	}
	for _, e := range entries {
		ps := ix.postings[e.term]
		if !w.own(e.term) {
			ps = slices.Clip(ps) // the append below copies instead of writing into a shared array
		}
		ix.postings[e.term] = append(ps, posting{doc: slot, freqs: e.freqs})
	}
}

// builder analyses docs.
type builder struct {
	a       *analyzer
	acts    actions
	slot    map[string]int // term → its entry in entries, for the doc being analysed
	entries []entry
	// shared caches the terms of the texts that every tool of an upstream repeats (its name and instructions).
	shared map[string][]string
}

type entry struct {
	term  string
	freqs freqs
}

func newBuilder(a *analyzer, acts actions) *builder {
	return &builder{a: a, acts: acts, slot: make(map[string]int), shared: make(map[string][]string)}
}

// doc analyses one Doc. The entries are reused by the next call.
func (b *builder) doc(in Doc) (*doc, []entry) {
	clear(b.slot)
	b.entries = b.entries[:0]
	d := &doc{name: in.Name}
	name := b.a.analyze(in.Name)
	d.acts = b.acts.of(name)
	b.field(d, fieldName, name)
	b.field(d, fieldTitle, b.a.analyze(in.Title))
	b.field(d, fieldDescription, b.a.analyze(in.Description))
	b.field(d, fieldParamName, b.params(in.Params, func(p Param) string { return p.Name }))
	b.field(d, fieldParamDescription, b.params(in.Params, func(p Param) string { return p.Description }))
	b.field(d, fieldUpstream, b.sharedTerms(in.Upstream))
	b.field(d, fieldInstructions, b.sharedTerms(in.Instructions))
	d.terms = make([]string, len(b.entries))
	for i, e := range b.entries {
		d.terms[i] = e.term
		if e.freqs[fieldName] != 0 && b.acts[e.term] == 0 && d.nameN < math.MaxUint8 {
			d.nameN++
		}
	}
	return d, b.entries
}

// params analyses one text of each param, up to maxFieldBytes in all.
func (b *builder) params(ps []Param, text func(Param) string) []string {
	b.a.out = b.a.out[:0]
	n := 0
	for _, p := range ps {
		s := text(p)
		if n+len(s) > maxFieldBytes {
			break
		}
		n += len(s)
		b.a.add(s)
	}
	return b.a.out
}

func (b *builder) sharedTerms(s string) []string {
	if s == "" {
		return nil
	}
	if ts, ok := b.shared[s]; ok {
		return ts
	}
	ts := slices.Clone(b.a.analyze(s))
	b.shared[s] = ts
	return ts
}

func (b *builder) field(d *doc, f int, terms []string) {
	d.lens[f] = int32(len(terms))
	for _, t := range terms {
		i, ok := b.slot[t]
		if !ok {
			i = len(b.entries)
			b.slot[t] = i
			b.entries = append(b.entries, entry{term: t})
		}
		if b.entries[i].freqs[f] < math.MaxUint8 {
			b.entries[i].freqs[f]++
		}
	}
}

// Search returns the docs that allow accepts (all of them when allow is nil) that have at least one of the
// query's terms, best first, at most limit of them, or nil when there are none; equal scores are ordered by name.
// The docs allow rejects are dropped before ranking, so they never take a place in the result. allow is called
// once per doc for the statistics (see Stats) and once more per doc that has a query term, from the calling
// goroutine.
func (ix *Index) Search(query string, limit int, allow func(name string) bool) []Hit {
	return ix.SearchIn(ix.Stats(allow), query, limit, allow)
}

// Stats are the corpus statistics of the docs one caller may see: their number and total field lengths. BM25
// normalises by them, so computed over the whole index they would let a caller estimate, from its scores, how
// many docs it cannot see. Computing them asks allow about every doc once; a caller that searches often under
// the same allow (a session, until the catalog or its policy changes) keeps them and passes them to SearchIn.
type Stats struct {
	ix     *Index
	n      int
	sumLen [numFields]int64
}

// Stats computes the statistics of the docs allow accepts (every doc, for a nil allow).
func (ix *Index) Stats(allow func(name string) bool) *Stats {
	st := &Stats{ix: ix}
	if ix == nil {
		return st
	}
	if allow == nil {
		st.n, st.sumLen = len(ix.byName), ix.sumLen
		return st
	}
	for _, d := range ix.docs {
		if d == nil || !allow(d.name) {
			continue
		}
		st.n++
		for f := range numFields {
			st.sumLen[f] += int64(d.lens[f])
		}
	}
	return st
}

// SearchIn is Search with statistics computed beforehand by this index's Stats under the same allow; statistics
// of another index (or nil) are computed anew.
func (ix *Index) SearchIn(st *Stats, query string, limit int, allow func(name string) bool) []Hit {
	if ix == nil || limit <= 0 || len(ix.byName) == 0 {
		return nil
	}
	if st == nil || st.ix != ix {
		st = ix.Stats(allow)
	}
	if st.n == 0 {
		return nil
	}
	terms, acts := ix.queryTerms(query)

	n := float64(st.n)
	var norm [numFields]struct{ base, perLen float64 }
	for f := range numFields {
		b := ix.rank.B[f]
		if st.sumLen[f] == 0 {
			norm[f].base = 1
			continue
		}
		avg := float64(st.sumLen[f]) / n
		norm[f].base, norm[f].perLen = 1-b, b/avg
	}

	sc, _ := ix.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{scores: make([]float64, len(ix.docs)), cover: make([]float64, len(ix.docs)), state: make([]int8, len(ix.docs)),
			named: make([]uint8, len(ix.docs))}
	}
	scores, cover, state, seen := sc.scores, sc.cover, sc.state, sc.seen[:0]
	total := 0.0
	for _, qt := range terms {
		ps := ix.postings[qt.term]
		if len(ps) == 0 {
			continue
		}
		// The document frequency counts only the docs the caller may see, as the doc count and mean lengths do
		// (Stats): a word's rarity must not tell whether hidden tools use it.
		df := 0
		for _, p := range ps {
			if state[p.doc] == 0 {
				state[p.doc] = -1
				seen = append(seen, p.doc) // to be cleared
				if allow == nil || allow(ix.docs[p.doc].name) {
					state[p.doc] = 1
				}
			}
			if state[p.doc] == 1 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		qw := qt.weight
		total += qw
		named := ix.actions[qt.term] == 0
		for _, p := range ps {
			if state[p.doc] != 1 {
				continue
			}
			d := ix.docs[p.doc]
			tf := 0.0
			for f, c := range p.freqs {
				if c != 0 {
					tf += ix.rank.Weights[f] * float64(c) / (norm[f].base + norm[f].perLen*float64(d.lens[f]))
				}
			}
			scores[p.doc] += qw * idf * tf / (ix.rank.K1 + tf)
			cover[p.doc] += qw
			if named && p.freqs[fieldName] != 0 {
				sc.named[p.doc]++
			}
		}
	}
	ix.reweigh(sc, seen, total, acts)
	hits := topHits(ix, seen, state, scores, limit)
	ix.explain(hits, terms, state)
	for _, slot := range seen {
		scores[slot], cover[slot], state[slot], sc.named[slot] = 0, 0, 0, 0
	}
	sc.seen = seen
	ix.scratch.Put(sc)
	return hits
}

// better orders hits: higher score first, then by name, so that results are deterministic.
func better(a, b Hit) bool {
	return a.Score > b.Score || a.Score == b.Score && a.Name < b.Name
}

// topHits selects the limit best of the seen docs that are allowed with a min-heap (the worst kept hit at the root), in
// O(seen · log limit), then sorts them.
func topHits(ix *Index, seen []int32, state []int8, scores []float64, limit int) []Hit {
	heap := make([]Hit, 0, min(limit, len(seen)))
	for _, slot := range seen {
		if state[slot] != 1 {
			continue
		}
		h := Hit{Name: ix.docs[slot].name, Score: scores[slot]}
		if len(heap) < limit {
			heap = append(heap, h)
			for i := len(heap) - 1; i > 0; {
				parent := (i - 1) / 2
				if !better(heap[parent], heap[i]) {
					break
				}
				heap[parent], heap[i] = heap[i], heap[parent]
				i = parent
			}
			continue
		}
		if !better(h, heap[0]) {
			continue
		}
		heap[0] = h
		for i := 0; ; {
			worst, l, r := i, 2*i+1, 2*i+2
			if l < len(heap) && better(heap[worst], heap[l]) {
				worst = l
			}
			if r < len(heap) && better(heap[worst], heap[r]) {
				worst = r
			}
			if worst == i {
				break
			}
			heap[i], heap[worst] = heap[worst], heap[i]
			i = worst
		}
	}
	if len(heap) == 0 {
		return nil
	}
	slices.SortFunc(heap, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return heap
}

package bleveeval

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/char/regexp"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/camelcase"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

// fields are the bleve fields, in the order of the boosts in a config.
var fields = []string{"name", "title", "description", "param_names", "param_descriptions", "upstream", "instructions"}

// Boosts per field: package search's default weights, none, and the best of a small grid tried on bleve (by MRR
// and recall@5; the grid: these three, {3 2 1 .5 .3 1 .2}, {2 1.5 1 .5 .3 .5 .1}, {3 2 1 1 .5 1 .2} and
// {5 2 2 1 .5 1 .2}).
var (
	searchBoosts = []float64{7, 2, 1, 0.5, 0.3, 1, 0.2}
	equalBoosts  = []float64{1, 1, 1, 1, 1, 1, 1}
	bleveBoosts  = []float64{1.5, 1, 1, 0.3, 0.2, 0.3, 0.05}
)

type bdoc struct {
	Name              string `json:"name"`
	Title             string `json:"title"`
	Description       string `json:"description"`
	ParamNames        string `json:"param_names"`
	ParamDescriptions string `json:"param_descriptions"`
	Upstream          string `json:"upstream"`
	Instructions      string `json:"instructions"`
}

func toBleve(d search.Doc) bdoc {
	var pn, pd []string
	for _, p := range d.Params {
		pn = append(pn, p.Name)
		pd = append(pd, p.Description)
	}
	return bdoc{d.Name, d.Title, d.Description, strings.Join(pn, " "), strings.Join(pd, " "), d.Upstream, d.Instructions}
}

// config is one way of using bleve.
type config struct {
	name     string
	analyzer string // "en", or "tool": identifiers split like package search, snowball, CJK bigrams
	bm25     bool
	boosts   []float64
}

var configs = []config{
	{"bleve en, TF-IDF, search's boosts", "en", false, searchBoosts},
	{"bleve en, BM25, search's boosts", "en", true, searchBoosts},
	{"bleve en, BM25, bleve's boosts", "en", true, bleveBoosts},
	{"bleve tool, TF-IDF, bleve's boosts", "tool", false, bleveBoosts},
	{"bleve tool, BM25, search's boosts", "tool", true, searchBoosts},
	{"bleve tool, BM25, equal boosts", "tool", true, equalBoosts},
	{"bleve tool, BM25, bleve's boosts", "tool", true, bleveBoosts},
}

// best is the configuration that bleve does best with, used for the timings.
var best = configs[len(configs)-1]

func newMapping(c config) *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	if c.bm25 {
		im.ScoringModel = index.BM25Scoring
	}
	if c.analyzer == "tool" {
		must(im.AddCustomCharFilter("separators", map[string]any{"type": regexp.Name, "regexp": `[_\-./:]`, "replace": " "}))
		must(im.AddCustomAnalyzer("tool", map[string]any{
			"type":         custom.Name,
			"char_filters": []string{"separators"},
			"tokenizer":    unicode.Name,
			"token_filters": []string{
				camelcase.Name, cjk.WidthName, lowercase.Name, en.StopName, en.SnowballStemmerName, cjk.BigramName,
			},
		}))
	}
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range fields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = c.analyzer
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f, fm)
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = c.analyzer
	return im
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// buildBleve makes an in-memory scorch index (bleve's default index type; an empty path keeps it in memory).
func buildBleve(c config, docs []search.Doc) bleve.Index {
	idx, err := bleve.NewUsing("", newMapping(c), scorch.Name, scorch.Name, nil)
	must(err)
	b := idx.NewBatch()
	for _, d := range docs {
		must(b.Index(d.Name, toBleve(d)))
	}
	must(idx.Batch(b))
	return idx
}

// bleveQuery is the usual field-boosted query of bleve: a match query per field, boosted, in a disjunction.
func bleveQuery(text string, boosts []float64) query.Query {
	var qs []query.Query
	for i, f := range fields {
		m := bleve.NewMatchQuery(text)
		m.SetField(f)
		m.SetBoost(boosts[i])
		qs = append(qs, m)
	}
	return bleve.NewDisjunctionQuery(qs...)
}

func searchBleve(idx bleve.Index, c config, text string, limit int) []string {
	res, err := idx.Search(bleve.NewSearchRequestOptions(bleveQuery(text, c.boosts), limit, 0, false))
	must(err)
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

func searchOurs(ix *search.Index, text string, limit int) []string {
	hits := ix.Search(text, limit, nil)
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

// heapOf returns the heap bytes that what build returns keeps alive, after a GC on either side.
func heapOf[T any](build func() T) (T, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	if after.HeapAlloc < before.HeapAlloc {
		return v, 0
	}
	return v, after.HeapAlloc - before.HeapAlloc
}

// TestCompare logs recall, build time and memory of package search and of bleve configurations. It asserts
// nothing: the numbers go to docs/benchmarks.md.
//
//	cd routing/search/bleveeval && go test -run TestCompare -v
func TestCompare(t *testing.T) {
	qs := evalset.Queries()
	docs := evalset.Docs()
	ours := search.Build(docs)
	t.Logf("%-36s %v", "package search", evalset.Evaluate(qs, func(q string) []string { return searchOurs(ours, q, 10) }))
	for _, c := range configs {
		idx := buildBleve(c, docs)
		r := evalset.Evaluate(qs, func(q string) []string { return searchBleve(idx, c, q, 10) })
		t.Logf("%-36s %v", c.name, r)
		if testing.Verbose() && c.name == best.name {
			for _, m := range r.Misses {
				t.Logf("  miss (rank %d): %q want %v got %v", m.Rank, m.Query.Text, m.Query.Want, m.Top)
			}
		}
		must(idx.Close())
	}
	for _, n := range []int{len(docs), 1000, 10000} {
		docs := evalset.Synthesize(n)
		start := time.Now()
		ix, mem := heapOf(func() *search.Index { return search.Build(docs) })
		el := time.Since(start)
		t.Logf("package search, %5d tools: build %v, heap %s (%d B/tool)",
			n, el.Round(time.Millisecond), mib(mem), mem/uint64(n))
		runtime.KeepAlive(ix)
		c := best
		start = time.Now()
		idx, mem := heapOf(func() bleve.Index { return buildBleve(c, docs) })
		el = time.Since(start)
		t.Logf("%s, %5d tools: build %v, heap %s (%d B/tool)", c.name, n, el.Round(time.Millisecond), mib(mem), mem/uint64(n))
		must(idx.Close())
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// percentiles reports p50 and p99 of ds, in ns, as benchmark metrics.
func percentiles(b *testing.B, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds) == 0 {
		return
	}
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkSearch times one query of the set per op, cycling through them, at 500 and 10,000 tools. Each
// sub-benchmark builds its own index after a GC, so that the other's heap and goroutines do not weigh on it.
//
//	cd routing/search/bleveeval && go test -run '^$' -bench . -benchmem
func BenchmarkSearch(b *testing.B) {
	qs := evalset.Queries()
	for _, n := range []int{500, 10000} {
		docs := evalset.Synthesize(n)
		b.Run(fmt.Sprintf("search/%d", n), func(b *testing.B) {
			ix := search.Build(docs)
			runtime.GC()
			ds := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				ix.Search(qs[i%len(qs)].Text, 10, nil)
				ds = append(ds, time.Since(start))
			}
			percentiles(b, ds)
		})
		b.Run(fmt.Sprintf("bleve/%d", n), func(b *testing.B) {
			idx := buildBleve(best, docs)
			runtime.GC()
			ds := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				searchBleve(idx, best, qs[i%len(qs)].Text, 10)
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			percentiles(b, ds)
			must(idx.Close())
		})
	}
}

// BenchmarkBuild builds an index of 10,000 tools per op. Bleve's op ends when its batch returns and the index
// answers searches; its merges go on in the background, and the Close that waits for them is not timed.
func BenchmarkBuild(b *testing.B) {
	docs := evalset.Synthesize(10000)
	b.Run("search/10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			search.Build(docs)
		}
	})
	b.Run("bleve/10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			idx := buildBleve(best, docs)
			b.StopTimer()
			must(idx.Close())
			b.StartTimer()
		}
	})
}

// BenchmarkUpdate replaces one tool of 10,000 per op: search.With (a new index) against bleve's Index (in place).
func BenchmarkUpdate(b *testing.B) {
	docs := evalset.Synthesize(10000)
	b.Run("search/10000", func(b *testing.B) {
		ix := search.Build(docs)
		runtime.GC()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			d := docs[i%len(docs)]
			d.Description += " changed"
			ix = ix.With([]search.Doc{d}, nil)
		}
	})
	b.Run("bleve/10000", func(b *testing.B) {
		idx := buildBleve(best, docs)
		runtime.GC()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			d := docs[i%len(docs)]
			d.Description += " changed"
			must(idx.Index(d.Name, toBleve(d)))
		}
		b.StopTimer()
		must(idx.Close())
	})
}

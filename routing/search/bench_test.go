package search_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

// The benchmarks of docs/benchmarks.md ("Tool search index"):
//
//	go test -run '^$' -bench . -benchmem ./routing/search

// BenchmarkSearch times one query of the evaluation set per op, cycling through them, at 500 and 10,000 tools
// (evalset.Synthesize), and reports the median and 99th percentile of the single searches.
func BenchmarkSearch(b *testing.B) {
	qs := evalset.Queries()
	for _, n := range []int{500, 10000} {
		ix := search.Build(evalset.Synthesize(n))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ds := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				ix.Search(qs[i%len(qs)].Text, 10, nil)
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2]), "p50-ns")
			b.ReportMetric(float64(ds[len(ds)*99/100]), "p99-ns")
		})
	}
}

// BenchmarkSearchAllowed is a search by a caller who may see half the tools: "stats" computes that caller's
// statistics on every search (asking allow about every tool), "kept" reuses them, as a session does until the
// catalog changes.
func BenchmarkSearchAllowed(b *testing.B) {
	qs := evalset.Queries()
	ix := search.Build(evalset.Synthesize(10000))
	allow := func(name string) bool { return len(name)%2 == 0 }
	st := ix.Stats(allow)
	for _, tc := range []struct {
		name string
		run  func(q string)
	}{
		{"stats", func(q string) { ix.Search(q, 10, allow) }},
		{"kept", func(q string) { ix.SearchIn(st, q, 10, allow) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				tc.run(qs[i%len(qs)].Text)
			}
		})
	}
}

// BenchmarkBuild builds an index per op, and reports the heap that one index keeps, per tool.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{500, 10000} {
		docs := evalset.Synthesize(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			ix := search.Build(docs)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(ix)
			b.ReportAllocs()
			for b.Loop() {
				search.Build(docs)
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/tool")
		})
	}
}

// BenchmarkWith derives a new index with one tool of 10,000 changed, per op.
func BenchmarkWith(b *testing.B) {
	docs := evalset.Synthesize(10000)
	ix := search.Build(docs)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d := docs[i%len(docs)]
		d.Description += " changed"
		ix = ix.With([]search.Doc{d}, nil)
	}
}

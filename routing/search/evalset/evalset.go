// Package evalset is the evaluation set of the tool search (issue 16): real tool definitions from published MCP
// servers, queries phrased as users ask for a task and labelled with the tools that answer them, and the recall
// measures. The recall test of package search, its benchmarks, the comparison with bleve (the nested module in
// routing/search/bleveeval) and a benchmark harness all read the same set through this package.
//
// testdata/tools.json says where each server's tools came from: most are the tools/list output of the server's
// npm package, a few are written from the server's documentation.
package evalset

import (
	_ "embed" // the data set ships in the package, so that a benchmark binary needs no files beside it
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-mcp/switchboard/routing/search"
)

//go:embed testdata/tools.json
var toolsJSON string

//go:embed testdata/queries.txt
var queriesTxt string

// Server is one MCP server of the set and its tools.
type Server struct {
	Upstream     string `json:"upstream"` // the upstream name the gateway would give it; tools are <Upstream>__<name>
	Source       string `json:"source"`   // where the definitions came from
	Instructions string `json:"instructions"`
	Tools        []Tool `json:"tools"`
}

// Tool is one tool definition, reduced to what the index reads.
type Tool struct {
	Name        string         `json:"name"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Params      []search.Param `json:"params"`
}

// Query is one labelled query: any tool in Want answers it.
type Query struct {
	Text string
	Want []string
}

// Servers returns the servers of the set.
func Servers() []Server {
	var f struct {
		Servers []Server `json:"servers"`
	}
	if err := json.Unmarshal([]byte(toolsJSON), &f); err != nil {
		panic("evalset: testdata/tools.json: " + err.Error()) // embedded at build time, so a test catches it
	}
	return f.Servers
}

// Docs returns the tools of the set as the gateway would index them, named <upstream>__<tool>.
func Docs() []search.Doc {
	var docs []search.Doc
	for _, s := range Servers() {
		for _, t := range s.Tools {
			docs = append(docs, search.Doc{
				Name:         s.Upstream + "__" + t.Name,
				Title:        t.Title,
				Description:  t.Description,
				Params:       t.Params,
				Upstream:     s.Upstream,
				Instructions: s.Instructions,
			})
		}
	}
	return docs
}

// Synthesize returns n docs for scale tests: the set's docs, then copies of them as if from further upstreams of
// the same servers ("github2__create_issue" of upstream "github2"), so that the vocabulary and the length of
// descriptions stay those of real tools.
func Synthesize(n int) []search.Doc {
	base := Docs()
	out := make([]search.Doc, 0, n)
	for c := 1; len(out) < n; c++ {
		for _, d := range base {
			if len(out) == n {
				break
			}
			if c > 1 {
				up := d.Upstream + strconv.Itoa(c)
				d.Name = up + strings.TrimPrefix(d.Name, d.Upstream)
				d.Upstream = up
			}
			out = append(out, d)
		}
	}
	return out
}

// Queries returns the labelled queries of the set.
func Queries() []Query {
	var qs []Query
	for i, line := range strings.Split(queriesTxt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, want, ok := strings.Cut(line, " => ")
		if !ok || strings.TrimSpace(want) == "" {
			panic(fmt.Sprintf("evalset: testdata/queries.txt:%d: want QUERY => NAME...", i+1))
		}
		qs = append(qs, Query{Text: strings.TrimSpace(text), Want: strings.Fields(want)})
	}
	return qs
}

// Result is the quality of a ranking on a set of queries.
type Result struct {
	Queries  int
	Recall1  float64 // the share of queries with a wanted tool first
	Recall5  float64 // … among the first 5
	Recall10 float64 // … among the first 10
	MRR      float64 // the mean of 1/rank of the first wanted tool (0 when it is not in the ranking)
	Misses   []Miss  // the queries with no wanted tool among the first 5
}

// Miss is a query whose wanted tools are not among the first 5, and what came instead.
type Miss struct {
	Query Query
	Rank  int      // the rank of the first wanted tool, 0 when absent
	Top   []string // the first 5 names returned
}

// String is a one-line summary for logs and reports.
func (r Result) String() string {
	return fmt.Sprintf("queries=%d recall@1=%.3f recall@5=%.3f recall@10=%.3f MRR=%.3f",
		r.Queries, r.Recall1, r.Recall5, r.Recall10, r.MRR)
}

// Evaluate measures rank, which returns the names it finds for a query, best first, on qs. Recall counts a query
// as found at k when any of its wanted tools is among the first k names, which is what an agent choosing among k
// results needs.
func Evaluate(qs []Query, rank func(query string) []string) Result {
	r := Result{Queries: len(qs)}
	if len(qs) == 0 {
		return r
	}
	for _, q := range qs {
		names := rank(q.Text)
		pos := 0
		for i, name := range names {
			if slices.Contains(q.Want, name) {
				pos = i + 1
				break
			}
		}
		if pos == 1 {
			r.Recall1++
		}
		if pos >= 1 && pos <= 5 {
			r.Recall5++
		}
		if pos >= 1 && pos <= 10 {
			r.Recall10++
		}
		if pos > 0 {
			r.MRR += 1 / float64(pos)
		}
		if pos == 0 || pos > 5 {
			r.Misses = append(r.Misses, Miss{Query: q, Rank: pos, Top: names[:min(5, len(names))]})
		}
	}
	n := float64(len(qs))
	r.Recall1 /= n
	r.Recall5 /= n
	r.Recall10 /= n
	r.MRR /= n
	return r
}

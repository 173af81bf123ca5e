// Package evalset is the evaluation set of the tool search (issue 16): real tool definitions from published MCP
// servers, queries phrased as users ask for a task and labelled with the tools that answer them, and the recall
// measures. The recall test of package search, its benchmarks, the comparison with bleve (the nested module in
// routing/search/bleveeval) and a benchmark harness all read the same set through this package.
//
// testdata/tools.json says where each server's tools came from: most are the tools/list output of the server's
// npm package, a few are written from the server's documentation.
//
// # The catalog (issue 34)
//
// testdata/catalog.json is a larger catalog for an evaluation that cannot flatter the search: the tools/list of
// well over 80 real MCP servers, over 1,000 tools, with every definition kept whole (name, title, description,
// inputSchema, and outputSchema and annotations where the server gives them) and near-duplicates across servers
// (several web searches, several GitHub-, Jira- or Slack-like servers) kept as real catalogs have them. Catalog
// returns its servers and CatalogDocs its tools as the gateway would index them. Its shape is
//
//	{"about": "...", "servers": [{"upstream": "brave", "purpose": "one line", "purposeFrom": "package.json description",
//	  "source": "tools/list of npm PACKAGE@VERSION (serverInfo NAME VERSION), captured over stdio",
//	  "instructions": "...", "tools": [{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}]}]}
//
// Each server's purpose is one line from its package's description or its README, never from its tools: it is what
// a writer of queries sees when the queries are written blind (without the tool lists).
//
// The catalog came from capture/capture.mjs (a Node script with no dependencies, since nearly all the servers are npm
// packages), which reads capture/servers.json: the npm packages and versions, plus the example servers of the
// official Go SDK and of mcp-go built as plain commands. Servers are installed outside the repository and started
// over stdio, one at a time under a timeout, with dummy credentials; no call but initialize and tools/list is made.
// To capture it again:
//
//	cd routing/search/evalset/capture
//	node capture.mjs install     # npm install --ignore-scripts into $SCRATCH (default /work/scratch-eval), go build the examples
//	node capture.mjs capture     # writes ../testdata/catalog.json and capture/failures.txt
//	node capture.mjs purposes    # prints "upstream<TAB>purpose", one line a server, for the blind query writer
//
// capture/failures.txt lists the servers of servers.json that gave no tools on the last capture, and why.
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

//go:embed testdata/catalog.json
var catalogJSON string

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

// CatalogServer is one server of the catalog (testdata/catalog.json): a real MCP server's tools/list, kept whole.
type CatalogServer struct {
	Upstream     string        `json:"upstream"`    // short lowercase name; its tools are exposed as <Upstream>__<name>
	Purpose      string        `json:"purpose"`     // one line on what the server is for, from its package, not its tools
	PurposeFrom  string        `json:"purposeFrom"` // where Purpose was taken from ("package.json description", "README")
	Source       string        `json:"source"`      // package@version, its serverInfo, and how the tools were captured
	Instructions string        `json:"instructions"`
	Tools        []CatalogTool `json:"tools"`
}

// CatalogTool is one tool definition as the server listed it.
type CatalogTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Catalog returns the servers of the catalog, in the order of capture/servers.json.
func Catalog() []CatalogServer {
	var f struct {
		Servers []CatalogServer `json:"servers"`
	}
	if err := json.Unmarshal([]byte(catalogJSON), &f); err != nil {
		panic("evalset: testdata/catalog.json: " + err.Error()) // embedded at build time, so a test catches it
	}
	return f.Servers
}

// CatalogDocs returns the catalog's tools as the gateway would index them, named <upstream>__<tool>, with the
// top-level parameters of each input schema in the schema's order.
func CatalogDocs() []search.Doc {
	var docs []search.Doc
	for _, s := range Catalog() {
		for _, t := range s.Tools {
			docs = append(docs, search.Doc{
				Name:         s.Upstream + "__" + t.Name,
				Title:        t.Title,
				Description:  t.Description,
				Params:       SchemaParams(t.InputSchema),
				Upstream:     s.Upstream,
				Instructions: s.Instructions,
			})
		}
	}
	return docs
}

// SchemaParams returns the top-level properties of a JSON Schema object, in the order the schema lists them, with
// their descriptions. A schema it cannot read gives no parameters.
func SchemaParams(schema json.RawMessage) []search.Param {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(s.Properties)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var ps []search.Param
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ps
		}
		name, _ := tok.(string)
		var p struct {
			Description string `json:"description"`
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return ps
		}
		_ = json.Unmarshal(raw, &p) // a property that is not an object (true, false) has no description
		ps = append(ps, search.Param{Name: name, Description: p.Description})
	}
	return ps
}

package evalset

import (
	_ "embed" // see evalset.go
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// The blind queries (issue 34): written by writers who saw only each server's one-line purpose (Catalog's Purpose),
// never a tool list, in three styles, and committed before they were labelled against the catalog. testdata/blind
// has the queries, the labels and how they were made (README.md).
var (
	//go:embed testdata/blind/queries.tsv
	blindQueriesTSV string
	//go:embed testdata/blind/labels.tsv
	blindLabelsTSV string
)

// Styles of the blind queries.
const (
	StyleUser    = "user"    // a person's question or request, often by intent and with filler
	StyleKeyword = "keyword" // a model's short keyword query for a capability
	StyleTask    = "task"    // a task description in a sentence or two
)

// BlindQuery is one blind query with its two labels.
type BlindQuery struct {
	ID     string // "<writer>-<n>"
	Style  string // StyleUser, StyleKeyword or StyleTask
	Server string // the upstream whose purpose it was written from
	Text   string
	// Strict are the tools that do exactly the asked job on Server (or, when it has none, the best tool for it
	// elsewhere); Equivalent every tool of the catalog a person would accept for the job, Strict included.
	Strict, Equivalent []string
	// HeldOut is the split, fixed by the id alone before any tuning (HeldOut): a held-out query is never tuned on.
	HeldOut bool
}

// HeldOut reports whether the query with this id is in the held-out split: a third of the ids, chosen by their
// FNV-1a hash. The rule depends on nothing but the id, so it was fixed before any ranking ran on the queries and
// cannot follow the results.
func HeldOut(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%3 == 0
}

// BlindQueries returns the blind queries that some tool of the catalog answers (a query labelled "-" has none and
// is left out; BlindUnanswerable counts them).
func BlindQueries() []BlindQuery {
	qs, _ := blindSet()
	return qs
}

// BlindUnanswerable returns how many blind queries no tool of the catalog answers.
func BlindUnanswerable() int {
	_, n := blindSet()
	return n
}

func blindSet() ([]BlindQuery, int) {
	labels := map[string][2][]string{}
	for i, f := range tsv(blindLabelsTSV, "labels.tsv", 3) {
		if f[1] == "-" {
			labels[f[0]] = [2][]string{}
			continue
		}
		strict, equiv := names(f[1]), names(f[2])
		if len(strict) == 0 {
			panic(fmt.Sprintf("evalset: testdata/blind/labels.tsv:%d: %s has no strict label", i+2, f[0]))
		}
		labels[f[0]] = [2][]string{strict, union(strict, equiv)}
	}
	var qs []BlindQuery
	unanswerable := 0
	for i, f := range tsv(blindQueriesTSV, "queries.tsv", 4) {
		l, ok := labels[f[0]]
		if !ok {
			panic(fmt.Sprintf("evalset: testdata/blind/queries.tsv:%d: %s is not labelled", i+2, f[0]))
		}
		if len(l[0]) == 0 {
			unanswerable++
			continue
		}
		qs = append(qs, BlindQuery{ID: f[0], Style: f[1], Server: f[2], Text: f[3], Strict: l[0], Equivalent: l[1], HeldOut: HeldOut(f[0])})
	}
	return qs, unanswerable
}

// tsv splits a TSV file with a header line into rows of n fields.
func tsv(text, name string, n int) [][]string {
	var rows [][]string
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if i == 0 || strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(f) != n {
			panic(fmt.Sprintf("evalset: testdata/blind/%s:%d: %d fields, want %d", name, i+1, len(f), n))
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		rows = append(rows, f)
	}
	return rows
}

func names(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// BlindResult is a ranking's quality on blind queries by both measures: strict (a Strict tool found) and as a
// person would score it (an Equivalent tool found).
type BlindResult struct {
	Strict, Equivalent Result
}

// EvaluateBlind measures rank on qs by both labels.
func EvaluateBlind(qs []BlindQuery, rank func(query string) []string) BlindResult {
	strict := make([]Query, len(qs))
	equiv := make([]Query, len(qs))
	for i, q := range qs {
		strict[i] = Query{Text: q.Text, Want: q.Strict}
		equiv[i] = Query{Text: q.Text, Want: q.Equivalent}
	}
	return BlindResult{Strict: Evaluate(strict, rank), Equivalent: Evaluate(equiv, rank)}
}

// Split returns the queries of qs in the held-out split (heldOut true) or the tuned one.
func Split(qs []BlindQuery, heldOut bool) []BlindQuery {
	var out []BlindQuery
	for _, q := range qs {
		if q.HeldOut == heldOut {
			out = append(out, q)
		}
	}
	return out
}

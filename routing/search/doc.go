// Package search is the embedded full-text index behind the search_tools meta-tool (issue 16): it ranks the tools
// of a catalog against a task phrased in words, with no network and no external service.
//
// # Model
//
// Each tool is a Doc of seven fields, weighted for BM25F (Robertson and Zaragoza's per-field BM25): the
// client-visible name, the title, the description, the parameter names, the parameter descriptions, the
// upstream's name and the upstream's instructions, from most to least telling. Text is cut into terms by one
// analyzer for documents and queries alike: identifiers are split on snake_case, camelCase (acronyms included:
// "HTTPServer" is http, server), kebab-case, dots, slashes and digits; letters are lowercased; English stop words
// and lone Latin letters are dropped; English words are stemmed (Snowball's Porter2); Han, Hiragana, Katakana and
// Hangul runs become overlapping bigrams, since those scripts put no spaces between words.
//
// A query is understood before it is scored (intent.go): filler words ("latest", "please") count little, intent
// words expand to the words tools use for that capability (intentTable), and the kinds of action it names (list,
// create, update, delete, send; actionTable) are noted. After BM25F, each tool's score is scaled (reweigh.go) by
// the share of the query it matched, by the share of its own name's words the query has, and down when its name's
// verb is of another kind than the query's.
//
// The weights were chosen by measurement on the evaluation set in package evalset; docs/benchmarks.md ("Tool
// search index") has the numbers and the comparison with bleve that led to this package.
//
// # Concurrency and updates
//
// An Index never changes once made, so any number of goroutines may Search it at once. With derives a new Index
// from an old one, analysing only the docs it adds or replaces and copying only the postings those touch; the
// caller publishes it with an atomic.Pointer, so searches never wait for an update.
//
// # Visibility
//
// Search takes an allow function and drops the docs it rejects before ranking and before the limit, so a hidden
// tool never appears, is never counted and never takes a visible tool's place. The statistics BM25 normalises by
// (the number of docs, the mean field lengths, each term's document frequency) count only the docs allow accepts,
// so neither how many docs are hidden nor what they say shows in the scores. Stats and SearchIn let a caller
// that searches often under one allow compute the first two once.
package search

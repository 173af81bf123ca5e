// Package hybrid adds an optional semantic ranking to tool search (issue 16, "Optional hybrid search"): tool
// definitions and queries are embedded by an OpenAI-compatible /v1/embeddings endpoint, tools are ranked by the
// cosine similarity of their vectors to the query's, and that ranking is fused with package search's BM25 ranking
// by reciprocal rank.
//
// # Pieces
//
//   - Embedder talks to the provider: Vectors embeds documents (cached first, the rest in batches, cached after),
//     Query embeds a query (with a small cache of its own). Both return unit-length vectors.
//   - VectorCache is where document vectors are kept: MemoryCache in the process, or a shared store (the gateway's
//     routing/state stores implement it, Redis included), so that replicas and restarts do not embed a definition
//     again. Vectors are cached under the model and the SHA-256 of the text embedded: a definition that has not
//     changed (nor its rename or description override) is never sent twice.
//   - Rank orders candidate vectors by cosine similarity to a query vector; Fuse merges two rankings by
//     reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009).
//
// # Failure
//
// Hybrid search is an improvement, never a dependency: when the provider fails, the caller serves BM25 alone.
// The Embedder counts each failure in the metric switchboard.search.embeddings.failures (by operation and reason)
// and logs once per outage: a warning at the first failure after a success, and a line when the provider answers
// again. Healthy reports which it is. A call the caller cancelled is not counted; one that ran past its deadline
// is, since a provider too slow for the search budget has failed it.
//
// # Secrets
//
// The API key goes only into the Authorization header of requests to the configured endpoint: it is never logged,
// never put in an error (a provider's error message quoting it is redacted), and never sent on a redirect (the
// client follows none).
//
// # Typical use
//
//	hits := ix.Search(query, limit, allow)
//	if emb != nil && docVectors != nil {
//		ctx, cancel := context.WithTimeout(ctx, budget)
//		q, err := emb.Query(ctx, query)
//		cancel()
//		if err == nil { // else: BM25 alone; the Embedder counted and logged the failure
//			hits = hybrid.Fuse(hits, hybrid.Rank(q, docVectors, allow, limit), 0, limit)
//		}
//	}
package hybrid

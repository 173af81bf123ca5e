package routing

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Hybrid search (issue 16). With an Embedder, every tool of the catalog gets a vector in the background after
// each rebuild, and a search fuses the BM25 ranking with the ranking by cosine similarity to the query's vector
// (reciprocal rank fusion). The provider is never on a search's critical path for long: the query's vector has
// SearchTimeout, and any failure (or vectors not computed yet) leaves BM25 alone, which the Embedder counts and
// logs; the client never sees an error from it.

// Embedder turns texts into vectors (routing/search/hybrid implements it over an OpenAI-compatible API).
type Embedder interface {
	Vectors(ctx context.Context, docs map[string]string) (map[string][]float32, error)
	Query(ctx context.Context, text string) ([]float32, error)
}

var _ Embedder = (*hybrid.Embedder)(nil)

// toolVectors are the vectors of one catalog's tools, by exposed name, with the text each was computed from: a
// vector whose tool changed since is not used.
type toolVectors struct {
	print map[string]uint64 // the tool's fingerprint in the index it was computed for (toolIndex.print)
	vec   map[string][]float32
}

// embeddings holds the router's tool vectors and wakes the worker that computes them.
type embeddings struct {
	embedder Embedder                 // nil: search is BM25 alone
	timeout  time.Duration            // Options.SearchTimeout
	cat      *atomic.Pointer[catalog] // the router's shared catalog, whose tools it embeds

	cur  atomic.Pointer[toolVectors]
	kick chan struct{} // buffered (1): a rebuild asks for vectors of the new catalog
}

// wantVectors asks the worker for the vectors of the current catalog (after a rebuild); it never blocks.
func (e *embeddings) wantVectors() {
	if e.embedder == nil {
		return
	}
	select {
	case e.kick <- struct{}{}:
	default: // a request is pending: it will see this catalog
	}
}

// run computes the current catalog's tool vectors whenever asked, until ctx ends. A failure keeps the
// previous vectors (searches use those whose tool is unchanged) and is retried after the upstream.Backoff of
// the failures in a row (from a second, doubling up to a minute, jittered; a success starts it over), or at the
// next rebuild, whichever comes first.
func (e *embeddings) run(ctx context.Context) {
	if e.embedder == nil {
		return
	}
	var retry <-chan time.Time
	backoff := upstream.Backoff{Min: time.Second, Max: time.Minute}
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-retry:
		}
		retry = nil
		c := e.cat.Load()
		if c.index == nil {
			continue
		}
		texts := make(map[string]string, len(c.items[kindTools]))
		for i, raw := range c.items[kindTools] {
			ref := c.refs[kindTools][i]
			name, _ := jsonrpc.LookupString(raw, "name")
			texts[name] = hybrid.DocText(searchDoc(raw, ref.up.cfg.Name, ""))
		}
		vecs, err := e.embedder.Vectors(ctx, texts)
		if err != nil {
			// The Embedder logged and counted it; searches use BM25 and the vectors they have.
			retry = time.After(backoff.Delay(failures))
			failures++
			continue
		}
		failures = 0
		e.cur.Store(&toolVectors{print: c.index.print, vec: vecs})
	}
}

// searchTimeout bounds the wait for a query's vector.
func (e *embeddings) searchTimeout() time.Duration {
	if e.timeout > 0 {
		return e.timeout
	}
	return 2 * time.Second
}

// rank runs a search on a catalog snapshot: BM25F, fused with the vector ranking when an Embedder is configured
// and answers in time.
func (e *embeddings) rank(ctx context.Context, c *catalog, st *search.Stats, query string, limit int, allow func(string) bool) []search.Hit {
	bm25 := c.index.ix.SearchIn(st, query, limit, allow)
	tv := e.cur.Load()
	if e.embedder == nil || tv == nil {
		return bm25
	}
	qctx, cancel := context.WithTimeout(ctx, e.searchTimeout())
	qv, err := e.embedder.Query(qctx, query)
	cancel()
	if err != nil {
		return bm25 // counted and logged by the Embedder
	}
	fresh := func(name string) bool {
		// A vector of a tool that changed since it was computed ranks by words that are no longer there.
		p, ok := c.index.print[name]
		return ok && tv.print[name] == p && allow(name)
	}
	return hybrid.Blend(bm25, qv, tv.vec, fresh, limit)
}

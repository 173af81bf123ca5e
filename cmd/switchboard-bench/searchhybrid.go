package main

// Hybrid search's recall (issue 34, "the hybrid mode stays"): the blind queries ranked as the gateway ranks them
// with an embeddings provider, beside BM25 alone, on the same splits.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
)

// hybridTimeout bounds each request to the provider: a CPU model embeds a batch of long tool texts in seconds.
const hybridTimeout = 2 * time.Minute

// hybridResult is hybrid search's recall on the blind queries, with BM25's beside it.
type hybridResult struct {
	docs, dims int
	embedTime  time.Duration // the catalog's vectors, all batches
	changed    int           // queries whose first 10 the vectors changed, of all the splits' queries
	rows       []hybridRow   // tuned strict, tuned equivalent, held-out strict, held-out equivalent
}

// hybridRow is one split and label, ranked both ways.
type hybridRow struct {
	split, label  string
	bm25, blended evalset.Result
}

// hybridRecall embeds docs with the provider of cfg, then ranks every query of qs by BM25 and by BM25 fused with
// the vectors (hybrid.Blend, limit 10), as the gateway's search does with an Embedder. A provider error ends the
// measurement: recall counted over partial vectors would not be the model's.
func hybridRecall(ctx context.Context, cfg hybrid.Config, docs []search.Doc, qs []evalset.BlindQuery) (hybridResult, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = hybridTimeout
	}
	emb, err := hybrid.NewEmbedder(cfg, hybrid.NewMemoryCache(len(docs)+1), nil, nil)
	if err != nil {
		return hybridResult{}, err
	}
	texts := make(map[string]string, len(docs))
	for _, d := range docs {
		texts[d.Name] = hybrid.DocText(d)
	}
	start := time.Now()
	vecs, err := emb.Vectors(ctx, texts)
	if err != nil {
		return hybridResult{}, fmt.Errorf("embedding %d tools: %w", len(texts), err)
	}
	out := hybridResult{docs: len(vecs), embedTime: time.Since(start)}
	for _, v := range vecs {
		out.dims = len(v)
		break
	}
	ix := search.Build(docs)
	for _, split := range []struct {
		name string
		held bool
	}{{"tuned", false}, {"held-out", true}} {
		part := evalset.Split(qs, split.held)
		var qerr error
		blended := evalset.EvaluateBlind(part, func(q string) []string {
			bm := ix.Search(q, 10, nil)
			qv, err := emb.Query(ctx, q)
			if err != nil {
				qerr = fmt.Errorf("embedding the query %q: %w", q, err)
				return nil
			}
			blended := hitNames(hybrid.Blend(bm, qv, vecs, nil, 10))
			if !slices.Equal(blended, hitNames(bm)) {
				out.changed++
			}
			return blended
		})
		if qerr != nil {
			return hybridResult{}, qerr
		}
		bm := evalset.EvaluateBlind(part, rankWith(ix))
		out.rows = append(out.rows,
			hybridRow{split.name, "strict", bm.Strict, blended.Strict},
			hybridRow{split.name, "equivalent", bm.Equivalent, blended.Equivalent})
	}
	return out, nil
}

// hitNames is the names of hits, in order.
func hitNames(hits []search.Hit) []string {
	names := make([]string, len(hits))
	for i, h := range hits {
		names[i] = h.Name
	}
	return names
}

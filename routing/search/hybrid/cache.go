package hybrid

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"
)

// VectorCache keeps embedding vectors under keys the caller chooses (the Embedder uses the model and a hash of
// the text). It is a cache: entries may go at any time, and a key that is missing is embedded again.
//
// GetVectors returns the vectors it has of keys, leaving the others out; an error means the cache could not be
// used (the Embedder then asks the provider). SetVectors stores vectors, replacing what their keys held. Both are
// safe for concurrent use. Vectors passed to SetVectors and returned by GetVectors are not modified afterwards by
// the Embedder.
type VectorCache interface {
	GetVectors(ctx context.Context, keys []string) (map[string][]float32, error)
	SetVectors(ctx context.Context, vecs map[string][]float32) error
}

var _ VectorCache = (*MemoryCache)(nil)

// DefaultCacheEntries is the size of a MemoryCache made with a size <= 0, and of the one NewEmbedder makes when
// given no cache: above the tools of a large catalog (10,000 tools at 1,536 dimensions take some 60 MB).
const DefaultCacheEntries = 20_000

// MemoryCache is a VectorCache in the process, bounded in entries, that drops the least recently used first. It
// is golang-lru's cache, as routing/state's Memory keeps its vectors: one LRU for both.
type MemoryCache struct {
	max int // the bound, for tests
	lru *lru.Cache[string, []float32]
}

// NewMemoryCache returns an empty cache of at most maxEntries vectors (DefaultCacheEntries when maxEntries <= 0).
func NewMemoryCache(maxEntries int) *MemoryCache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	c, err := lru.New[string, []float32](maxEntries)
	if err != nil {
		panic("hybrid: " + err.Error()) // only a size <= 0 is refused
	}
	return &MemoryCache{max: maxEntries, lru: c}
}

// GetVectors implements VectorCache. Each vector found becomes the most recently used. The slices returned are
// the cache's: do not modify them.
func (c *MemoryCache) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[string][]float32, len(keys))
	for _, k := range keys {
		if v, ok := c.lru.Get(k); ok {
			out[k] = v
		}
	}
	return out, nil
}

// SetVectors implements VectorCache. It stores copies of vecs, dropping the least recently used past its bound;
// empty vectors are ignored.
func (c *MemoryCache) SetVectors(ctx context.Context, vecs map[string][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for k, v := range vecs {
		if len(v) == 0 {
			continue
		}
		c.lru.Add(k, append([]float32(nil), v...))
	}
	return nil
}

// keep stores v under k as it is, shared.
func (c *MemoryCache) keep(k string, v []float32) { c.lru.Add(k, v) }

// get returns the vector under k, shared, marking it used.
func (c *MemoryCache) get(k string) ([]float32, bool) { return c.lru.Get(k) }

// Len returns the number of vectors held.
func (c *MemoryCache) Len() int { return c.lru.Len() }

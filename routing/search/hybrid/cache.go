package hybrid

import (
	"container/list"
	"context"
	"sync"
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

// MemoryCache is a VectorCache in the process, bounded in entries, that drops the least recently used first.
type MemoryCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element // key → element of lru, whose Value is a *entry
	lru     list.List                // most recently used at the front
}

type entry struct {
	key string
	vec []float32
}

// NewMemoryCache returns an empty cache of at most maxEntries vectors (DefaultCacheEntries when maxEntries <= 0).
func NewMemoryCache(maxEntries int) *MemoryCache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	return &MemoryCache{max: maxEntries, entries: map[string]*list.Element{}}
}

// GetVectors implements VectorCache. Each vector found becomes the most recently used. The slices returned are
// the cache's: do not modify them.
func (c *MemoryCache) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]float32, len(keys))
	for _, k := range keys {
		if e, ok := c.entries[k]; ok {
			c.lru.MoveToFront(e)
			out[k] = e.Value.(*entry).vec
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
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range vecs {
		if len(v) == 0 {
			continue
		}
		c.put(k, append([]float32(nil), v...))
	}
	return nil
}

// put stores v, the cache's own, under k; c.mu is held.
func (c *MemoryCache) put(k string, v []float32) {
	if e, ok := c.entries[k]; ok {
		e.Value.(*entry).vec = v
		c.lru.MoveToFront(e)
		return
	}
	c.entries[k] = c.lru.PushFront(&entry{key: k, vec: v})
	for c.lru.Len() > c.max {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(*entry).key)
	}
}

// keep stores v under k as it is, shared.
func (c *MemoryCache) keep(k string, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(k, v)
}

// get returns the vector under k, shared, marking it used.
func (c *MemoryCache) get(k string) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*entry).vec, true
}

// Len returns the number of vectors held.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

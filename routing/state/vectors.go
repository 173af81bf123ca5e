package state

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
)

// The vector cache: embedding vectors of tool definitions for hybrid tool search (issue 16), kept so that a
// definition is sent to the embeddings provider once, not once per replica, per rebuild or per restart. Memory and
// Redis both have GetVectors and SetVectors, which is the VectorCache of package routing/search/hybrid. It is a
// cache: an entry may be gone at any time (evicted, expired), and a caller that misses asks the provider again.
//
// Keys are opaque to the store (the caller builds them, e.g. the model and a hash of the text), non-empty and at
// most 4096 bytes; a vector has 1 to MaxVectorDims elements (ErrInvalid otherwise).
//
// In Redis each vector is a string key of its own, its float32 elements little-endian (4 bytes each):
//
//	<prefix>vector:<key>    string; PX = VectorTTL, set by SetVectors and restarted by each GetVectors that
//	                        finds it (GETEX), so vectors in use stay and those of definitions gone expire
//
// (GETEX needs Redis 6.2 or later). So the bound in Redis is time, and Redis's own maxmemory policy, which may
// evict them (volatile-lru suits). In Memory the bound is a count: MaxVectors, the least recently used out first.
const (
	// MaxVectors bounds the vectors a Memory keeps: above the tools of a large catalog (10,000 tools at 1,536
	// dimensions take some 60 MB), so that a rebuild finds them all.
	MaxVectors = 20_000
	// VectorTTL is how long a vector stays in Redis after it was last written or read.
	VectorTTL = 7 * 24 * time.Hour
	// MaxVectorDims bounds a vector's length (models in use have 256 to 4,096 dimensions).
	MaxVectorDims = 16_384
)

// maxVectorKeyLen bounds a vector's key, as a pin key's.
const maxVectorKeyLen = 4096

// vectorChunk is how many commands one pipeline to Redis carries, so that a call over thousands of vectors does
// not build one reply of hundreds of megabytes.
const vectorChunk = 256

func checkVectorKey(key string) error {
	if key == "" || len(key) > maxVectorKeyLen {
		return fmt.Errorf("%w: vector key of length %d", ErrInvalid, len(key))
	}
	return nil
}

func checkVectors(vecs map[string][]float32) error {
	for k, v := range vecs {
		if err := checkVectorKey(k); err != nil {
			return err
		}
		if len(v) == 0 || len(v) > MaxVectorDims {
			return fmt.Errorf("%w: vector %q of %d dimensions (1 to %d)", ErrInvalid, k, len(v), MaxVectorDims)
		}
	}
	return nil
}

// memVectors is Memory's vector cache: golang-lru's cache (as hybrid.MemoryCache, one LRU for both), made on first
// use so that its zero value is an empty cache of MaxVectors entries.
type memVectors struct {
	once  sync.Once
	max   int // 0: MaxVectors (tests set less before the first use)
	cache *lru.Cache[string, []float32]
}

// held returns the cache, making it on first use.
func (mv *memVectors) held() *lru.Cache[string, []float32] {
	mv.once.Do(func() {
		limit := mv.max
		if limit <= 0 {
			limit = MaxVectors
		}
		c, err := lru.New[string, []float32](limit)
		if err != nil {
			panic("state: " + err.Error()) // only a size <= 0 is refused
		}
		mv.cache = c
	})
	return mv.cache
}

// GetVectors returns the vectors stored under keys, leaving out those it does not have; the slices are the
// caller's to change. Each vector found becomes the most recently used.
func (m *Memory) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	for _, k := range keys {
		if err := checkVectorKey(k); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := m.vectors.held()
	out := make(map[string][]float32, len(keys))
	for _, k := range keys {
		if v, ok := c.Get(k); ok {
			out[k] = append([]float32(nil), v...)
		}
	}
	return out, nil
}

// SetVectors stores copies of vecs, replacing what their keys held. Past MaxVectors the least recently used
// vectors are dropped. Nothing is stored when any key or vector is invalid (ErrInvalid).
func (m *Memory) SetVectors(ctx context.Context, vecs map[string][]float32) error {
	if err := checkVectors(vecs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c := m.vectors.held()
	for k, v := range vecs {
		c.Add(k, append([]float32(nil), v...))
	}
	return nil
}

func (r *Redis) vectorKey(key string) string { return r.prefix + "vector:" + key }

// GetVectors returns the vectors stored under keys, leaving out those it does not have, and restarts the TTL of
// each one found (GETEX, pipelined). A stored value that is not a whole number of float32s, or too long, counts as
// missing: it is overwritten by the next SetVectors of its key.
func (r *Redis) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	for _, k := range keys {
		if err := checkVectorKey(k); err != nil {
			return nil, err
		}
	}
	out := make(map[string][]float32, len(keys))
	for start := 0; start < len(keys); start += vectorChunk {
		chunk := keys[start:min(start+vectorChunk, len(keys))]
		pipe := r.c.Pipeline()
		cmds := make([]*redis.StringCmd, len(chunk))
		for i, k := range chunk {
			cmds[i] = pipe.GetEx(ctx, r.vectorKey(k), VectorTTL)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, unavailable("get vectors", err)
		}
		for i, cmd := range cmds {
			b, err := cmd.Bytes()
			switch {
			case errors.Is(err, redis.Nil):
				continue
			case err != nil:
				return nil, unavailable("get vectors", err)
			}
			if v, ok := decodeVector(b); ok {
				out[chunk[i]] = v
			}
		}
	}
	return out, nil
}

// SetVectors stores vecs, each under its own key with a TTL of VectorTTL (SET PX, pipelined), replacing what
// their keys held. Nothing is stored when any key or vector is invalid (ErrInvalid); when Redis fails part way,
// some may have been.
func (r *Redis) SetVectors(ctx context.Context, vecs map[string][]float32) error {
	if err := checkVectors(vecs); err != nil {
		return err
	}
	pipe := r.c.Pipeline()
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		n = 0
		if _, err := pipe.Exec(ctx); err != nil {
			return unavailable("set vectors", err)
		}
		return nil
	}
	for k, v := range vecs {
		pipe.Set(ctx, r.vectorKey(k), encodeVector(v), VectorTTL)
		if n++; n == vectorChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// encodeVector lays v out as float32s, little-endian.
func encodeVector(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// decodeVector reverses encodeVector; false for what it cannot have made.
func decodeVector(b []byte) ([]float32, bool) {
	if len(b) == 0 || len(b)%4 != 0 || len(b)/4 > MaxVectorDims {
		return nil, false
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

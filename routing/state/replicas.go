package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// memReplicas is Memory's ReplicaRegistry: each URL's registration, under one lock.
type memReplicas struct {
	mu       sync.Mutex
	replicas map[string]replicaReg
}

// replicaReg is one registration in memory: when it was made and when it lapses.
type replicaReg struct{ registered, expires time.Time }

// redisReplicas is Redis's ReplicaRegistry: a key per URL that expires with its registration.
type redisReplicas struct {
	c      redis.UniversalClient
	prefix string
}

var (
	_ ReplicaRegistry = (*memReplicas)(nil)
	_ ReplicaRegistry = (*redisReplicas)(nil)
)

// RegisterReplica implements ReplicaRegistry.
func (m *memReplicas) RegisterReplica(ctx context.Context, url string, ttl time.Duration) error {
	if err := checkReplica(url, ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for u, reg := range m.replicas { // a handful of entries: sweeping on every registration is cheap
		if !now.Before(reg.expires) {
			delete(m.replicas, u)
		}
	}
	m.replicas[url] = replicaReg{registered: now, expires: now.Add(ttl)}
	return nil
}

// ReplicaRegistered implements ReplicaRegistry.
func (m *memReplicas) ReplicaRegistered(ctx context.Context, url string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	reg, ok := m.replicas[url]
	return ok && time.Now().Before(reg.expires), nil
}

// Replicas implements ReplicaRegistry.
func (m *memReplicas) Replicas(ctx context.Context) ([]ReplicaRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var out []ReplicaRecord
	for u, reg := range m.replicas {
		if now.Before(reg.expires) {
			out = append(out, ReplicaRecord{URL: u, Registered: reg.registered})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	if len(out) > MaxReplicas {
		out = out[:MaxReplicas]
	}
	return out, nil
}

// replicaIndexKey is the sorted set of registered URLs, scored by the Unix millisecond of their last registration
// (the registering replica's clock): what Replicas reads. The per-URL keys stay the truth ReplicaRegistered asks.
func (r *redisReplicas) replicaIndexKey() string { return r.prefix + "replicas" }

// Replicas implements ReplicaRegistry: the index's members whose own key is still there (the keys expire on the
// server's clock; the index's scores, on the registering replica's, only prune it), newest registrations first
// when there are more than MaxReplicas.
func (r *redisReplicas) Replicas(ctx context.Context) ([]ReplicaRecord, error) {
	urls, err := r.c.ZRevRange(ctx, r.replicaIndexKey(), 0, MaxReplicas-1).Result()
	if err != nil {
		return nil, unavailable("list replicas", err)
	}
	if len(urls) == 0 {
		return nil, nil
	}
	pipe := r.c.Pipeline()
	gets := make([]*redis.StringCmd, len(urls))
	for i, u := range urls {
		gets[i] = pipe.Get(ctx, r.replicaKey(u))
	}
	scores := pipe.ZMScore(ctx, r.replicaIndexKey(), urls...)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("list replicas", err)
	}
	var out []ReplicaRecord
	for i, u := range urls {
		if v, err := gets[i].Result(); err == nil && v == u && i < len(scores.Val()) {
			out = append(out, ReplicaRecord{URL: u, Registered: time.UnixMilli(int64(scores.Val()[i]))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out, nil
}

// replicaKey names a registration: the URL is hashed, so a key's length and characters never depend on it.
func (r *redisReplicas) replicaKey(url string) string {
	sum := sha256.Sum256([]byte(url))
	return r.prefix + "replica:" + hex.EncodeToString(sum[:16])
}

// RegisterReplica implements ReplicaRegistry.
func (r *redisReplicas) RegisterReplica(ctx context.Context, url string, ttl time.Duration) error {
	if err := checkReplica(url, ttl); err != nil {
		return err
	}
	// The index is pruned of registrations older than ttl and held to MaxReplicas (the oldest go first) on every
	// registration, in the same round trip; it never expires itself.
	now := time.Now()
	idx := r.replicaIndexKey()
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.replicaKey(url), url, ttl)
		p.ZAdd(ctx, idx, redis.Z{Score: float64(now.UnixMilli()), Member: url})
		p.ZRemRangeByScore(ctx, idx, "-inf", fmt.Sprintf("(%d", now.Add(-ttl).UnixMilli()))
		p.ZRemRangeByRank(ctx, idx, 0, -MaxReplicas-1)
		return nil
	})
	if err != nil {
		return unavailable("register replica", err)
	}
	return nil
}

// ReplicaRegistered implements ReplicaRegistry. The stored URL is compared too, so a hash collision cannot vouch
// for another address.
func (r *redisReplicas) ReplicaRegistered(ctx context.Context, url string) (bool, error) {
	v, err := r.c.Get(ctx, r.replicaKey(url)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("look up replica", err)
	}
	return v == url, nil
}

func checkReplica(url string, ttl time.Duration) error {
	if url == "" {
		return errors.New("state: replica URL is empty")
	}
	if ttl <= 0 {
		return fmt.Errorf("state: replica TTL %v is not positive", ttl)
	}
	return nil
}

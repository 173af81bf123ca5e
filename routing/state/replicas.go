package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// memReplicas is Memory's ReplicaRegistry: each URL's expiry, under one lock.
type memReplicas struct {
	mu       sync.Mutex
	replicas map[string]time.Time
}

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
	for u, exp := range m.replicas { // a handful of entries: sweeping on every registration is cheap
		if !now.Before(exp) {
			delete(m.replicas, u)
		}
	}
	m.replicas[url] = now.Add(ttl)
	return nil
}

// ReplicaRegistered implements ReplicaRegistry.
func (m *memReplicas) ReplicaRegistered(ctx context.Context, url string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.replicas[url]
	return ok && time.Now().Before(exp), nil
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
	if err := r.c.Set(ctx, r.replicaKey(url), url, ttl).Err(); err != nil {
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

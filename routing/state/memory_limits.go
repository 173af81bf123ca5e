package state

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// memLimiter is Memory's RateLimiter: token buckets and lease sets by key, under one lock.
type memLimiter struct {
	mu        sync.Mutex
	buckets   map[string]*bucket
	leases    map[string]map[uint64]time.Time
	leaseSeq  uint64
	nextSweep time.Time
}

var _ RateLimiter = (*memLimiter)(nil)

func newMemLimiter() *memLimiter {
	return &memLimiter{buckets: map[string]*bucket{}, leases: map[string]map[uint64]time.Time{}}
}

// bucket is a token bucket: tokens at ts.
type bucket struct {
	tokens float64
	ts     time.Time
	idle   time.Duration // how long until it is full again: then it can be forgotten
}

func checkRate(key string, rate float64, burst int) error {
	if err := checkID("limiter key", key); err != nil {
		return err
	}
	if !(rate > 0) || math.IsInf(rate, 0) || burst < 1 {
		return fmt.Errorf("%w: rate %v, burst %d", ErrInvalid, rate, burst)
	}
	return nil
}

func checkLease(key string, limit int, ttl time.Duration) error {
	if err := checkID("limiter key", key); err != nil {
		return err
	}
	if limit < 1 || ttl <= 0 {
		return fmt.Errorf("%w: limit %d, ttl %v", ErrInvalid, limit, ttl)
	}
	return nil
}

// Allow implements RateLimiter.
func (m *memLimiter) Allow(ctx context.Context, key string, rate float64, burst int) (bool, time.Duration, error) {
	if err := checkRate(key, rate, burst); err != nil {
		return false, 0, err
	}
	if err := ctx.Err(); err != nil {
		return false, 0, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	b := m.buckets[key]
	if b == nil {
		b = &bucket{tokens: float64(burst), ts: now}
		m.buckets[key] = b
	}
	if elapsed := now.Sub(b.ts); elapsed > 0 {
		b.tokens += elapsed.Seconds() * rate
	}
	b.tokens = min(b.tokens, float64(burst))
	b.ts = now
	b.idle = time.Duration(float64(burst) / rate * float64(time.Second))
	if b.tokens >= 1 {
		b.tokens--
		return true, 0, nil
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / rate * float64(time.Second)))
	return false, max(wait, time.Microsecond), nil
}

// Acquire implements RateLimiter.
func (m *memLimiter) Acquire(ctx context.Context, key string, limit int, ttl time.Duration) (func(), bool, error) {
	if err := checkLease(key, limit, ttl); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	set := m.leases[key]
	for id, exp := range set {
		if !now.Before(exp) {
			delete(set, id)
		}
	}
	if len(set) >= limit {
		return nil, false, nil
	}
	if set == nil {
		set = map[uint64]time.Time{}
		m.leases[key] = set
	}
	m.leaseSeq++
	id := m.leaseSeq
	set[id] = now.Add(ttl)
	var once sync.Once
	release := func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if set := m.leases[key]; set != nil {
				delete(set, id)
				if len(set) == 0 {
					delete(m.leases, key)
				}
			}
		})
	}
	return release, true, nil
}

// limitSweepEvery paces sweep.
const limitSweepEvery = time.Minute

// sweep forgets full buckets and lapsed leases, at most once a minute; m.mu is held.
func (m *memLimiter) sweep(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	m.nextSweep = now.Add(limitSweepEvery)
	for k, b := range m.buckets {
		if now.Sub(b.ts) >= b.idle {
			delete(m.buckets, k)
		}
	}
	for k, set := range m.leases {
		for id, exp := range set {
			if !now.Before(exp) {
				delete(set, id)
			}
		}
		if len(set) == 0 {
			delete(m.leases, k)
		}
	}
}

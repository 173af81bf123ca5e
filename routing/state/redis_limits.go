package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLimiter is Redis's RateLimiter: a token bucket hash and a lease sorted set per key, changed by scripts.
type redisLimiter struct {
	c      redis.UniversalClient
	prefix string
}

var _ RateLimiter = (*redisLimiter)(nil)

func (r *redisLimiter) rateKey(key string) string  { return r.prefix + "rate:{" + key + "}" }
func (r *redisLimiter) leaseKey(key string) string { return r.prefix + "lease:{" + key + "}" }

// Allow implements RateLimiter with a token bucket in a Lua script (server time, one round trip).
func (r *redisLimiter) Allow(ctx context.Context, key string, rate float64, burst int) (bool, time.Duration, error) {
	if err := checkRate(key, rate, burst); err != nil {
		return false, 0, err
	}
	res, err := tokenBucket.Run(ctx, r.c, []string{r.rateKey(key)}, rate, burst).Int64Slice()
	if err != nil {
		return false, 0, unavailable("rate limit", err)
	}
	if len(res) != 2 {
		return false, 0, unavailable("rate limit", errBadReply)
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Microsecond, nil
}

// leaseReleaseTimeout bounds the ZREM of a release; a lease whose release fails lapses at its ttl.
const leaseReleaseTimeout = 2 * time.Second

// Acquire implements RateLimiter with a sorted set of leases scored by expiry, in a Lua script.
func (r *redisLimiter) Acquire(ctx context.Context, key string, limit int, ttl time.Duration) (func(), bool, error) {
	if err := checkLease(key, limit, ttl); err != nil {
		return nil, false, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	k := r.leaseKey(key)
	n, err := acquireLease.Run(ctx, r.c, []string{k}, limit, max(ttl.Milliseconds(), 1), id).Int()
	if err != nil {
		return nil, false, unavailable("acquire lease", err)
	}
	if n == 0 {
		return nil, false, nil
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
			defer cancel()
			_ = r.c.ZRem(ctx, k, id).Err()
		})
	}
	return release, true, nil
}

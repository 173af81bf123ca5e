package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Redis is the Store shared by replicas, on Redis (a single node, Sentinel or Cluster: any
// redis.UniversalClient). Keys are laid out as the package documentation says. Configure the client to fail
// fast when Redis is down (DialTimeout, DialerRetries, ReadTimeout, MaxRetries, ContextTimeoutEnabled; go-redis's
// defaults retry dials for about a second a command): every method then returns an error wrapping ErrUnavailable. Each Tail in progress holds a pool connection for up to its block
// time, and the bus holds one more connection, so size PoolSize for the streams a replica tails.
//
// It is one store per feature (redisSessions, redisEventLog, redisBus, redisLimiter, redisReplicas, redisPins,
// redisGrants, redisRegistrations, redisTasks, redisTokens, and the vector cache), each holding the client, the
// prefix and the options it needs; Redis embeds them, so their methods are Redis's. Only the bus runs anything: its reader, which
// Shutdown ends and waits for.
type Redis struct {
	c      redis.UniversalClient
	prefix string

	*redisSessions
	*redisEventLog
	*redisBus
	*redisLimiter
	*redisReplicas
	*redisPins
	*redisGrants
	*redisRegistrations
	*redisTasks
	*redisTokens
}

// NewRedis returns a store on client whose keys and channels all start with prefix (DefaultPrefix when "").
// It does not connect: use Ping for readiness. The client stays the caller's to close, after Shutdown.
func NewRedis(client redis.UniversalClient, prefix string, opts ...Option) *Redis {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	o := buildOptions(opts)
	return &Redis{
		c:                  client,
		prefix:             prefix,
		redisSessions:      &redisSessions{c: client, prefix: prefix, ttl: o.sessionTTL},
		redisEventLog:      &redisEventLog{c: client, prefix: prefix, maxLen: o.eventMaxLen, ttl: o.eventTTL},
		redisBus:           newRedisBus(client, prefix, o.busBuffer),
		redisLimiter:       &redisLimiter{c: client, prefix: prefix},
		redisReplicas:      &redisReplicas{c: client, prefix: prefix},
		redisPins:          &redisPins{c: client, prefix: prefix, max: o.maxPins},
		redisGrants:        &redisGrants{c: client, prefix: prefix},
		redisRegistrations: &redisRegistrations{c: client, prefix: prefix},
		redisTasks:         &redisTasks{c: client, prefix: prefix},
		redisTokens:        &redisTokens{c: client, prefix: prefix},
	}
}

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.c.Ping(ctx).Err(); err != nil {
		return unavailable("ping", err)
	}
	return nil
}

// Shutdown implements Store: it ends the bus's connection and reader and closes every subscription's channel.
func (r *Redis) Shutdown() { r.redisBus.shutdown() }

// unavailable wraps a failure to use Redis.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

var errBadReply = errors.New("unexpected reply")

package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Redis is the Store shared by replicas, on Redis (a single node, Sentinel or Cluster: any
// redis.UniversalClient). Keys are laid out as the package documentation says. Configure the client to fail
// fast when Redis is down (DialTimeout, DialerRetries, ReadTimeout, MaxRetries, ContextTimeoutEnabled; go-redis's
// defaults retry dials for about a second a command): every method then returns an error wrapping ErrUnavailable. Each Tail in progress holds a pool connection for up to its block
// time, and the bus holds one more connection, so size PoolSize for the streams a replica tails.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	opts   options
	bus    *fanout

	busMu    sync.Mutex // serializes SUBSCRIBE and UNSUBSCRIBE with the fanout's view of who is subscribed
	ps       *redis.PubSub
	stop     context.CancelFunc
	readerWG sync.WaitGroup
	closed   bool

	confirmMu sync.Mutex
	confirm   map[string][]chan struct{} // channel → who waits for Redis to confirm its SUBSCRIBE
}

// NewRedis returns a store on client whose keys and channels all start with prefix (DefaultPrefix when "").
// It does not connect: use Ping for readiness. The client stays the caller's to close, after Shutdown.
func NewRedis(client redis.UniversalClient, prefix string, opts ...Option) *Redis {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	o := buildOptions(opts)
	return &Redis{c: client, prefix: prefix, opts: o, bus: newFanout(o.busBuffer), confirm: map[string][]chan struct{}{}}
}

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.c.Ping(ctx).Err(); err != nil {
		return unavailable("ping", err)
	}
	return nil
}

// Shutdown implements Store: it ends the bus's connection and reader and closes every subscription's channel.
func (r *Redis) Shutdown() {
	r.busMu.Lock()
	r.closed = true
	ps, stop := r.ps, r.stop
	r.busMu.Unlock()
	if ps != nil {
		stop()
		_ = ps.Close()
		r.readerWG.Wait()
	}
	r.bus.shutdown()
}

// unavailable wraps a failure to use Redis.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// Keys; see the package documentation. The {…} hash tag puts a session's keys in one Cluster slot.

func (r *Redis) sessionKey(id string) string { return r.prefix + "session:{" + id + "}" }

func (r *Redis) eventsKey(session string, stream int64) string {
	return r.prefix + "events:{" + session + "}:" + strconv.FormatInt(stream, 10)
}

func (r *Redis) rateKey(key string) string   { return r.prefix + "rate:{" + key + "}" }
func (r *Redis) leaseKey(key string) string  { return r.prefix + "lease:{" + key + "}" }
func (r *Redis) busChannel(ch string) string { return r.prefix + "bus:" + ch }
func (r *Redis) pinsKey() string             { return r.prefix + "{pins}" }
func (r *Redis) busPrefix() string           { return r.prefix + "bus:" }

var errBadReply = errors.New("unexpected reply")

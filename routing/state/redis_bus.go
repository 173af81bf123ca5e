package state

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bus uses one pub/sub connection for the whole replica: the first local subscriber of a channel SUBSCRIBEs
// it, the last one to leave UNSUBSCRIBEs, and one reader goroutine hands arriving messages to the fanout, which
// never blocks it. When the connection drops, the reader redials (with backoff) and go-redis subscribes the
// channels again; messages published meanwhile are lost.

// redisBus is Redis's Bus. Its reader goroutine starts with the first subscription and ends with shutdown, which
// waits for it.
type redisBus struct {
	c      redis.UniversalClient
	prefix string
	f      *fanout

	busMu    sync.Mutex // serializes SUBSCRIBE and UNSUBSCRIBE with the fanout's view of who is subscribed
	ps       *redis.PubSub
	stop     context.CancelFunc
	readerWG sync.WaitGroup
	closed   bool

	confirmMu sync.Mutex
	confirm   map[string][]chan struct{} // channel → who waits for Redis to confirm its SUBSCRIBE
}

var _ Bus = (*redisBus)(nil)

func newRedisBus(c redis.UniversalClient, prefix string, buffer int) *redisBus {
	return &redisBus{c: c, prefix: prefix, f: newFanout(buffer), confirm: map[string][]chan struct{}{}}
}

func (r *redisBus) busChannel(ch string) string { return r.prefix + "bus:" + ch }
func (r *redisBus) busPrefix() string           { return r.prefix + "bus:" }

// shutdown ends the bus's connection and reader, waits for the reader, and closes every subscription's channel;
// Subscribe refuses from then on.
func (r *redisBus) shutdown() {
	r.busMu.Lock()
	r.closed = true
	ps, stop := r.ps, r.stop
	r.busMu.Unlock()
	if ps != nil {
		stop()
		_ = ps.Close()
		r.readerWG.Wait()
	}
	r.f.shutdown()
}

// Publish implements Bus.
func (r *redisBus) Publish(ctx context.Context, channel string, msg []byte) error {
	if err := checkID("channel", channel); err != nil {
		return err
	}
	if err := r.c.Publish(ctx, r.busChannel(channel), msg).Err(); err != nil {
		return unavailable("publish", err)
	}
	return nil
}

// Subscribe implements Bus.
func (r *redisBus) Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error) {
	if err := checkID("channel", channel); err != nil {
		return nil, nil, err
	}
	r.busMu.Lock()
	defer r.busMu.Unlock()
	if r.closed {
		return nil, nil, errShutdown
	}
	sub, first := r.f.add(channel)
	if sub == nil {
		return nil, nil, errShutdown
	}
	if first {
		name := r.busChannel(channel)
		var err error
		if r.ps == nil {
			// The pub/sub connection is made with the first channel, so that in Cluster it goes to a node.
			ps := r.c.Subscribe(ctx, name)
			if _, err = ps.Receive(ctx); err == nil { // the subscription's confirmation
				r.startReader(ps)
			} else {
				_ = ps.Close()
			}
		} else {
			err = r.subscribeConfirmed(ctx, name)
		}
		if err != nil {
			r.f.remove(channel, sub)
			if r.ps != nil {
				_ = r.ps.Unsubscribe(context.WithoutCancel(ctx), name) // forget it: not resubscribed later
			}
			return nil, nil, unavailable("subscribe", err)
		}
	}
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			r.busMu.Lock()
			defer r.busMu.Unlock()
			if r.f.remove(channel, sub) && r.ps != nil && !r.closed {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = r.ps.Unsubscribe(ctx, r.busChannel(channel)) // forgotten locally even when this fails
			}
		})
	}
	return sub.ch, cancel, nil
}

// Dropped implements Bus.
func (r *redisBus) Dropped() uint64 { return r.f.dropped.Load() }

// startReader keeps ps and runs its reader; r.busMu is held.
func (r *redisBus) startReader(ps *redis.PubSub) {
	ctx, stop := context.WithCancel(context.Background())
	r.ps, r.stop = ps, stop
	r.readerWG.Add(1)
	go func() { // owned by r: ends with shutdown
		defer r.readerWG.Done()
		r.read(ctx, ps)
	}()
}

// busHealthCheck is how long the bus's connection may be quiet before the reader PINGs it.
const busHealthCheck = 30 * time.Second

// read delivers messages until ctx ends, redialling with backoff while Redis is unreachable.
func (r *redisBus) read(ctx context.Context, ps *redis.PubSub) {
	prefix := r.busPrefix()
	const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
	backoff := minBackoff
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, busHealthCheck)
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			// Quiet for a while: PING, so that a connection that died silently fails its write and is redialled.
			_ = ps.Ping(ctx)
			continue
		}
		if err != nil {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		switch m := msg.(type) {
		case *redis.Message:
			if ch, ok := strings.CutPrefix(m.Channel, prefix); ok {
				r.f.deliver(ch, []byte(m.Payload))
			}
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				r.confirmed(m.Channel)
			}
		}
	}
}

// subscribeTimeout bounds the wait for Redis to confirm a SUBSCRIBE when ctx has no deadline.
const subscribeTimeout = 5 * time.Second

// subscribeConfirmed subscribes the pub/sub connection to name and waits until Redis confirms it (the reader
// sees the confirmation), so that a message published after Subscribe returns is delivered. r.busMu is held.
func (r *redisBus) subscribeConfirmed(ctx context.Context, name string) error {
	done := make(chan struct{})
	r.confirmMu.Lock()
	r.confirm[name] = append(r.confirm[name], done)
	r.confirmMu.Unlock()
	forget := func() {
		r.confirmMu.Lock()
		defer r.confirmMu.Unlock()
		waiters := r.confirm[name]
		for i, w := range waiters {
			if w == done {
				waiters = append(waiters[:i], waiters[i+1:]...)
				break
			}
		}
		if len(waiters) == 0 {
			delete(r.confirm, name)
		} else {
			r.confirm[name] = waiters
		}
	}
	if err := r.ps.Subscribe(ctx, name); err != nil {
		forget()
		return err
	}
	timer := time.NewTimer(subscribeTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		forget()
		return ctx.Err()
	case <-timer.C:
		forget()
		return errNoConfirmation
	}
}

// confirmed wakes whoever waits for the subscription to name.
func (r *redisBus) confirmed(name string) {
	r.confirmMu.Lock()
	defer r.confirmMu.Unlock()
	for _, w := range r.confirm[name] {
		close(w)
	}
	delete(r.confirm, name)
}

var errNoConfirmation = errors.New("no confirmation of SUBSCRIBE from Redis")

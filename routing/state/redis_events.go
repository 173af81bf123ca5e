package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisEventLog is Redis's EventLog: a stream per session and stream number, about maxLen entries long, kept ttl
// after its last Append or Close.
type redisEventLog struct {
	c      redis.UniversalClient
	prefix string
	maxLen int
	ttl    time.Duration
}

var _ EventLog = (*redisEventLog)(nil)

// eventsKey carries the session's id as a hash tag, as its record's key does: one Cluster slot.
func (r *redisEventLog) eventsKey(session string, stream int64) string {
	return r.prefix + "events:{" + session + "}:" + strconv.FormatInt(stream, 10)
}

// Append implements EventLog.
func (r *redisEventLog) Append(ctx context.Context, session string, stream int64, data []byte) (string, error) {
	if err := checkStream(session, stream); err != nil {
		return "", err
	}
	res, err := appendEvent.Run(ctx, r.c, []string{r.eventsKey(session, stream)},
		data, r.maxLen, r.ttl.Milliseconds()).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return "", fmt.Errorf("%w: session %s stream %d", ErrClosed, session, stream)
	case err != nil:
		return "", unavailable("append event", err)
	}
	return FormatEventID(stream, res), nil
}

// entries turns stream entries into events, up to the "end" marker; end reports whether it was there.
func entries(stream int64, msgs []redis.XMessage) (evs []Event, end bool) {
	for _, m := range msgs {
		d, ok := m.Values["d"]
		if !ok {
			if _, ok := m.Values["end"]; ok {
				return evs, true
			}
			continue
		}
		s, _ := d.(string)
		evs = append(evs, Event{ID: FormatEventID(stream, m.ID), Data: []byte(s)})
	}
	return evs, false
}

// After implements EventLog.
func (r *redisEventLog) After(ctx context.Context, session string, stream int64, afterID string, max int) ([]Event, error) {
	if err := checkStream(session, stream); err != nil {
		return nil, err
	}
	p, from, err := afterPosition(stream, afterID)
	if err != nil {
		return nil, err
	}
	start := "-"
	if from {
		start = p.next().String()
	}
	key := r.eventsKey(session, stream)
	var msgs []redis.XMessage
	if max > 0 {
		msgs, err = r.c.XRangeN(ctx, key, start, "+", int64(max)).Result()
	} else {
		msgs, err = r.c.XRange(ctx, key, start, "+").Result()
	}
	if err != nil {
		return nil, unavailable("read events", err)
	}
	evs, _ := entries(stream, msgs)
	return evs, nil
}

// Tail implements EventLog with XREAD BLOCK, which holds a pool connection while it waits.
func (r *redisEventLog) Tail(ctx context.Context, session string, stream int64, afterID string, block time.Duration) ([]Event, error) {
	if err := checkStream(session, stream); err != nil {
		return nil, err
	}
	p, from, err := afterPosition(stream, afterID)
	if err != nil {
		return nil, err
	}
	start := "0-0"
	if from {
		start = p.String()
	}
	clamped := tailWait(ctx, block)
	cut, block := clamped < block, clamped
	args := &redis.XReadArgs{
		Streams: []string{r.eventsKey(session, stream), start},
		Count:   int64(r.maxLen),
		Block:   -1, // no BLOCK: return at once
	}
	if block > 0 {
		args.Block = max(block, time.Millisecond) // BLOCK 0 would be forever
	}
	res, err := r.c.XRead(ctx, args).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil // nothing within block
	case err != nil && cut && (errors.Is(ctx.Err(), context.DeadlineExceeded) || isTimeout(err)):
		// The wait, cut to ctx's deadline, ended with the connection's deadline, which go-redis sets from ctx's:
		// its read may time out a moment before ctx's own timer marks ctx done.
		return nil, nil
	case err != nil:
		return nil, unavailable("tail events", err)
	case len(res) == 0:
		return nil, nil
	}
	evs, end := entries(stream, res[0].Messages)
	if len(evs) == 0 && end {
		return nil, fmt.Errorf("%w: session %s stream %d", ErrClosed, session, stream)
	}
	return evs, nil
}

// Close implements EventLog.
func (r *redisEventLog) Close(ctx context.Context, session string, stream int64) error {
	if err := checkStream(session, stream); err != nil {
		return err
	}
	err := closeEvents.Run(ctx, r.c, []string{r.eventsKey(session, stream)},
		r.maxLen, r.ttl.Milliseconds()).Err()
	if err != nil {
		return unavailable("close events", err)
	}
	return nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

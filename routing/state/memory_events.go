package state

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memEventLog is Memory's EventLog: each stream's log, at most maxLen events, kept ttl after its last Append or
// Close, under one lock.
type memEventLog struct {
	maxLen int
	ttl    time.Duration

	mu        sync.Mutex
	logs      map[logKey]*memLog
	nextSweep time.Time
}

var _ EventLog = (*memEventLog)(nil)

func newMemEventLog(maxLen int, ttl time.Duration) *memEventLog {
	return &memEventLog{maxLen: maxLen, ttl: ttl, logs: map[logKey]*memLog{}}
}

type logKey struct {
	session string
	stream  int64
}

// memLog is one stream's event log in memory.
type memLog struct {
	events  []memEvent // oldest first, at most maxLen
	last    position
	closed  bool
	expires time.Time
	wake    chan struct{} // closed and replaced on Append and Close
}

type memEvent struct {
	pos  position
	data []byte
}

// log returns the live log of k, creating it when create is set (nil otherwise); m.mu is held.
func (m *memEventLog) log(k logKey, now time.Time, create bool) *memLog {
	l := m.logs[k]
	if l != nil && !now.Before(l.expires) {
		close(l.wake)
		delete(m.logs, k)
		l = nil
	}
	if l == nil && create {
		l = &memLog{wake: make(chan struct{}), expires: now.Add(m.ttl)}
		m.logs[k] = l
	}
	return l
}

func (l *memLog) notify() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// after returns up to max events after p (from the start unless from), and whether the log ends there.
func (l *memLog) after(p position, from bool, max int) (out []Event, end bool) {
	for _, e := range l.events {
		if from && !p.less(e.pos) {
			continue
		}
		if max > 0 && len(out) == max {
			return out, false
		}
		out = append(out, Event{Data: e.data, ID: e.pos.String()})
	}
	return out, l.closed
}

func withStreamIDs(stream int64, evs []Event) []Event {
	for i := range evs {
		evs[i].ID = FormatEventID(stream, evs[i].ID)
	}
	return evs
}

// Append implements EventLog.
func (m *memEventLog) Append(ctx context.Context, session string, stream int64, data []byte) (string, error) {
	if err := checkStream(session, stream); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	l := m.log(logKey{session, stream}, now, true)
	if l.closed {
		return "", fmt.Errorf("%w: session %s stream %d", ErrClosed, session, stream)
	}
	p := position{ms: uint64(max(now.UnixMilli(), 0))}
	if !l.last.less(p) {
		p = l.last.next()
	}
	l.last = p
	if len(l.events) >= m.maxLen {
		n := copy(l.events, l.events[len(l.events)-m.maxLen+1:])
		clear(l.events[n:])
		l.events = l.events[:n]
	}
	l.events = append(l.events, memEvent{pos: p, data: append([]byte(nil), data...)})
	l.expires = now.Add(m.ttl)
	l.notify()
	return FormatEventID(stream, p.String()), nil
}

// After implements EventLog.
func (m *memEventLog) After(ctx context.Context, session string, stream int64, afterID string, max int) ([]Event, error) {
	if err := checkStream(session, stream); err != nil {
		return nil, err
	}
	p, from, err := afterPosition(stream, afterID)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.log(logKey{session, stream}, time.Now(), false)
	if l == nil {
		return nil, nil
	}
	evs, _ := l.after(p, from, max)
	return withStreamIDs(stream, evs), nil
}

// Tail implements EventLog.
func (m *memEventLog) Tail(ctx context.Context, session string, stream int64, afterID string, block time.Duration) ([]Event, error) {
	if err := checkStream(session, stream); err != nil {
		return nil, err
	}
	p, from, err := afterPosition(stream, afterID)
	if err != nil {
		return nil, err
	}
	var timer <-chan time.Time
	if block = tailWait(ctx, block); block > 0 {
		t := time.NewTimer(block)
		defer t.Stop()
		timer = t.C
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m.mu.Lock()
		l := m.log(logKey{session, stream}, time.Now(), true)
		evs, end := l.after(p, from, m.maxLen)
		wake := l.wake
		m.mu.Unlock()
		switch {
		case len(evs) > 0:
			return withStreamIDs(stream, evs), nil
		case end:
			return nil, fmt.Errorf("%w: session %s stream %d", ErrClosed, session, stream)
		case timer == nil:
			return nil, nil
		}
		select {
		case <-wake:
		case <-timer:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close implements EventLog.
func (m *memEventLog) Close(ctx context.Context, session string, stream int64) error {
	if err := checkStream(session, stream); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.log(logKey{session, stream}, now, true)
	l.closed = true
	l.expires = now.Add(m.ttl)
	l.notify()
	return nil
}

// sweep drops expired logs, at most once a TTL; m.mu is held.
func (m *memEventLog) sweep(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	m.nextSweep = now.Add(m.ttl)
	for k, l := range m.logs {
		if !now.Before(l.expires) {
			close(l.wake)
			delete(m.logs, k)
		}
	}
}

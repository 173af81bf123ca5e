package state

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is the in-process Store: the single-replica default, with nothing to run. Expired entries are dropped
// when they are next looked at, and swept now and then by the operations that add entries. Pins never expire, but
// like everything else in a Memory they are gone when the process ends (see the package documentation).
type Memory struct {
	opts options
	bus  *fanout

	mu        sync.Mutex // sessions
	sessions  map[string]*memSession
	nextSweep time.Time

	evMu        sync.Mutex // logs
	logs        map[logKey]*memLog
	nextEvSweep time.Time

	limMu        sync.Mutex // buckets, leases
	buckets      map[string]*bucket
	leases       map[string]map[uint64]time.Time
	leaseSeq     uint64
	nextLimSweep time.Time

	repMu    sync.Mutex // replicas
	replicas map[string]time.Time

	pinMu sync.Mutex // pins
	pins  map[string]string

	vectors memVectors // vectors.go; its zero value is empty, with a lock of its own
	grants  memGrants  // memory_grants.go; its zero value is empty, with a lock of its own

	registrations memRegistrations // memory_registrations.go; likewise
	tasks         memTasks         // memory_tasks.go; likewise
}

type memSession struct {
	rec     SessionRecord
	expires time.Time
}

// NewMemory returns an empty in-process store.
func NewMemory(opts ...Option) *Memory {
	o := buildOptions(opts)
	return &Memory{
		opts:     o,
		bus:      newFanout(o.busBuffer),
		sessions: map[string]*memSession{},
		logs:     map[logKey]*memLog{},
		buckets:  map[string]*bucket{},
		leases:   map[string]map[uint64]time.Time{},
		replicas: map[string]time.Time{},
		pins:     map[string]string{},
	}
}

// Ping implements Store: memory is always there.
func (m *Memory) Ping(ctx context.Context) error { return ctx.Err() }

// Shutdown implements Store: it closes every subscription's channel.
func (m *Memory) Shutdown() { m.bus.shutdown() }

// live returns the unexpired session id; m.mu is held.
func (m *Memory) live(id string, now time.Time) *memSession {
	s := m.sessions[id]
	if s != nil && !now.Before(s.expires) {
		delete(m.sessions, id)
		return nil
	}
	return s
}

// Create implements SessionStore.
func (m *Memory) Create(ctx context.Context, rec SessionRecord) error {
	if err := checkID("session id", rec.ID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepSessions(now)
	if m.live(rec.ID, now) != nil {
		return fmt.Errorf("%w: session %s", ErrExists, rec.ID)
	}
	rec = rec.Clone()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	rec.Touched = now
	m.sessions[rec.ID] = &memSession{rec: rec, expires: now.Add(m.opts.sessionTTL)}
	return nil
}

// Get implements SessionStore.
func (m *Memory) Get(ctx context.Context, id string) (SessionRecord, error) {
	if err := checkID("session id", id); err != nil {
		return SessionRecord{}, err
	}
	if err := ctx.Err(); err != nil {
		return SessionRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, time.Now())
	if s == nil {
		return SessionRecord{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return s.rec.Clone(), nil
}

// Update implements SessionStore. fn runs under the store's lock.
func (m *Memory) Update(ctx context.Context, id string, fn func(*SessionRecord) error) error {
	if err := checkID("session id", id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	rec := s.rec.Clone()
	if err := fn(&rec); err != nil {
		return err
	}
	rec.ID = id
	rec.Touched = now
	s.rec = rec
	s.expires = now.Add(m.opts.sessionTTL)
	return nil
}

// Touch implements SessionStore.
func (m *Memory) Touch(ctx context.Context, id string) error {
	if err := checkID("session id", id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	s.rec.Touched = now
	s.expires = now.Add(m.opts.sessionTTL)
	return nil
}

// Delete implements SessionStore.
func (m *Memory) Delete(ctx context.Context, id string) error {
	if err := checkID("session id", id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
	return nil
}

// sweepSessions drops expired records, at most once a TTL; m.mu is held.
func (m *Memory) sweepSessions(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	m.nextSweep = now.Add(m.opts.sessionTTL)
	for id, s := range m.sessions {
		if !now.Before(s.expires) {
			delete(m.sessions, id)
		}
	}
}

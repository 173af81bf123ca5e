package state

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memSessions is Memory's SessionStore: the records under one lock, each living ttl after its last write.
type memSessions struct {
	ttl time.Duration

	mu        sync.Mutex
	sessions  map[string]*memSession
	nextSweep time.Time
}

var _ SessionStore = (*memSessions)(nil)

type memSession struct {
	rec     SessionRecord
	expires time.Time
}

func newMemSessions(ttl time.Duration) *memSessions {
	return &memSessions{ttl: ttl, sessions: map[string]*memSession{}}
}

// live returns the unexpired session id; m.mu is held.
func (m *memSessions) live(id string, now time.Time) *memSession {
	s := m.sessions[id]
	if s != nil && !now.Before(s.expires) {
		delete(m.sessions, id)
		return nil
	}
	return s
}

// Create implements SessionStore.
func (m *memSessions) Create(ctx context.Context, rec SessionRecord) error {
	if err := checkID("session id", rec.ID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	if m.live(rec.ID, now) != nil {
		return fmt.Errorf("%w: session %s", ErrExists, rec.ID)
	}
	rec = rec.Clone()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	rec.Touched = now
	m.sessions[rec.ID] = &memSession{rec: rec, expires: now.Add(m.ttl)}
	return nil
}

// Get implements SessionStore.
func (m *memSessions) Get(ctx context.Context, id string) (SessionRecord, error) {
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
func (m *memSessions) Update(ctx context.Context, id string, fn func(*SessionRecord) error) error {
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
	s.expires = now.Add(m.ttl)
	return nil
}

// Touch implements SessionStore.
func (m *memSessions) Touch(ctx context.Context, id string) error {
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
	s.expires = now.Add(m.ttl)
	return nil
}

// Delete implements SessionStore.
func (m *memSessions) Delete(ctx context.Context, id string) error {
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

// sweep drops expired records, at most once a TTL; m.mu is held.
func (m *memSessions) sweep(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	m.nextSweep = now.Add(m.ttl)
	for id, s := range m.sessions {
		if !now.Before(s.expires) {
			delete(m.sessions, id)
		}
	}
}

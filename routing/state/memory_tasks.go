package state

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memTasks is Memory's TaskStore: the tasks by id and, to count and list them, their ids by principal, under one
// lock, made on first use, so that its zero value is empty. Expired tasks are dropped when looked at, and swept at
// most once a taskSweepEvery by CreateTask, so that tasks nobody asks about again do not stay.
type memTasks struct {
	mu          sync.Mutex
	tasks       map[string]*memTask
	byPrincipal map[string]map[string]struct{}
	nextSweep   time.Time
}

var _ TaskStore = (*memTasks)(nil)

type memTask struct {
	// rec is never changed once stored, its slices included: readers copy the struct under the lock and clone it
	// outside, and UpdateTask replaces it whole. A result may be MaxTaskSize bytes; the lock is not held to copy it.
	rec     TaskRecord
	expires time.Time
	version uint64 // counts UpdateTask's writes, for its optimistic check
}

// taskSweepEvery paces memTasks.sweep.
const taskSweepEvery = time.Minute

// init makes the maps; g.mu is held.
func (g *memTasks) init() {
	if g.tasks == nil {
		g.tasks = map[string]*memTask{}
		g.byPrincipal = map[string]map[string]struct{}{}
	}
}

// drop forgets a task; g.mu is held.
func (g *memTasks) drop(id string, t *memTask) {
	delete(g.tasks, id)
	ids := g.byPrincipal[t.rec.Principal]
	delete(ids, id)
	if len(ids) == 0 {
		delete(g.byPrincipal, t.rec.Principal)
	}
}

// live returns the unexpired task id, dropping it once expired; g.mu is held.
func (g *memTasks) live(id string, now time.Time) *memTask {
	t := g.tasks[id]
	if t != nil && !now.Before(t.expires) {
		g.drop(id, t)
		return nil
	}
	return t
}

// sweep drops expired tasks, at most once a taskSweepEvery; g.mu is held.
func (g *memTasks) sweep(now time.Time) {
	if now.Before(g.nextSweep) {
		return
	}
	g.nextSweep = now.Add(taskSweepEvery)
	for id, t := range g.tasks {
		if !now.Before(t.expires) {
			g.drop(id, t)
		}
	}
}

// CreateTask implements TaskStore. The record is encoded, to measure it, and copied before the lock is taken.
func (g *memTasks) CreateTask(ctx context.Context, rec TaskRecord, limit int) error {
	now := time.Now()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	if _, err := checkTask(rec, now); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := encodeTask(rec); err != nil {
		return err
	}
	rec = rec.Clone()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.sweep(now)
	if g.live(rec.ID, now) != nil {
		return fmt.Errorf("%w: task %s", ErrExists, rec.ID)
	}
	ids := g.byPrincipal[rec.Principal]
	if limit > 0 && len(ids) >= limit {
		for id := range ids { // only live tasks count
			g.live(id, now)
		}
		if len(g.byPrincipal[rec.Principal]) >= limit {
			return errTasksFull(rec, limit)
		}
		ids = g.byPrincipal[rec.Principal] // the last one dropped took the set with it
	}
	if ids == nil {
		ids = map[string]struct{}{}
		g.byPrincipal[rec.Principal] = ids
	}
	ids[rec.ID] = struct{}{}
	g.tasks[rec.ID] = &memTask{rec: rec, expires: rec.Created.Add(rec.TTL)}
	return nil
}

// GetTask implements TaskStore.
func (g *memTasks) GetTask(ctx context.Context, id string) (TaskRecord, error) {
	if err := checkTaskID(id); err != nil {
		return TaskRecord{}, err
	}
	if err := ctx.Err(); err != nil {
		return TaskRecord{}, err
	}
	g.mu.Lock()
	t := g.live(id, time.Now())
	var rec TaskRecord
	if t != nil {
		rec = t.rec
	}
	g.mu.Unlock()
	if t == nil {
		return TaskRecord{}, fmt.Errorf("%w: task %s", ErrNotFound, id)
	}
	return rec.Clone(), nil
}

// UpdateTask implements TaskStore optimistically, as Redis does, rather than running fn under the lock as
// Memory's Update does: the record is encoded to measure it, which for a large result takes long enough to hold up
// every other task's reads. So fn runs, and the record is encoded, outside the lock, and the result is stored only
// if no other write came in between (again from the start otherwise).
func (g *memTasks) UpdateTask(ctx context.Context, id string, fn func(*TaskRecord) error) error {
	if err := checkTaskID(id); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.mu.Lock()
		t := g.live(id, time.Now())
		var cur TaskRecord
		var version uint64
		if t != nil {
			cur, version = t.rec, t.version
		}
		g.mu.Unlock()
		if t == nil {
			return fmt.Errorf("%w: task %s", ErrNotFound, id)
		}
		rec := cur.Clone()
		if err := fn(&rec); err != nil {
			return err
		}
		rec.ID, rec.Principal, rec.Endpoint, rec.Created, rec.TTL = cur.ID, cur.Principal, cur.Endpoint, cur.Created, cur.TTL
		if _, err := encodeTask(rec); err != nil {
			return err
		}
		rec = rec.Clone() // what fn put in the record may still be its caller's
		g.mu.Lock()
		if g.tasks[id] == t && t.version == version && time.Now().Before(t.expires) {
			t.rec = rec
			t.version++
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		if attempt == maxUpdateAttempts {
			return fmt.Errorf("state: update task %s: gave up after %d conflicting writes", id, attempt)
		}
	}
}

// ListTasks implements TaskStore.
func (g *memTasks) ListTasks(ctx context.Context, principal string) ([]TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	g.mu.Lock()
	var out []TaskRecord
	for id := range g.byPrincipal[principal] {
		if t := g.live(id, now); t != nil {
			out = append(out, t.rec)
		}
	}
	g.mu.Unlock()
	for i := range out {
		out[i] = out[i].Clone()
	}
	sortTasks(out)
	return out, nil
}

func errTasksFull(rec TaskRecord, limit int) error {
	return fmt.Errorf("%w: principal %q holds %d live tasks, the most allowed: task %s refused", ErrFull,
		rec.Principal, limit, rec.ID)
}

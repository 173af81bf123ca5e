package state

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// memGrants is Memory's GrantStore: maps under one lock, made on first use, so that its zero value is empty.
// Expired entries are dropped when looked at, and swept at most once a grantSweepEvery by the operations that add
// entries, so that what nobody looks at again does not stay.
type memGrants struct {
	mu       sync.Mutex
	connects map[string]memConnect
	// upstream → principal → sealed. An upstream stays until DeleteUpstreamGrants, as in Redis's registry.
	grants    map[string]map[string][]byte
	locks     map[string]memLock
	lockSeq   uint64
	lists     map[string]memList
	nextSweep time.Time
}

var _ GrantStore = (*memGrants)(nil)

type memConnect struct {
	rec     ConnectRecord
	expires time.Time
}

type memLock struct {
	token   uint64
	expires time.Time
}

type memList struct {
	list    []byte // never changed once stored: readers copy it outside the lock
	expires time.Time
}

// grantSweepEvery paces memGrants.sweep.
const grantSweepEvery = time.Minute

// init makes the maps; g.mu is held.
func (g *memGrants) init() {
	if g.connects == nil {
		g.connects = map[string]memConnect{}
		g.grants = map[string]map[string][]byte{}
		g.locks = map[string]memLock{}
		g.lists = map[string]memList{}
	}
}

// sweep drops expired connects, locks and lists, at most once a grantSweepEvery unless forced; g.mu is held.
func (g *memGrants) sweep(now time.Time, force bool) {
	if !force && now.Before(g.nextSweep) {
		return
	}
	g.nextSweep = now.Add(grantSweepEvery)
	for id, c := range g.connects {
		if !now.Before(c.expires) {
			delete(g.connects, id)
		}
	}
	for k, l := range g.locks {
		if !now.Before(l.expires) {
			delete(g.locks, k)
		}
	}
	for u, l := range g.lists {
		if !now.Before(l.expires) {
			delete(g.lists, u)
		}
	}
}

// PutConnect implements GrantStore.
func (g *memGrants) PutConnect(ctx context.Context, id string, rec ConnectRecord, ttl time.Duration) error {
	if err := checkConnect(id, rec, ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.sweep(now, false)
	if c, ok := g.connects[id]; ok && now.Before(c.expires) {
		return fmt.Errorf("%w: connect %s", ErrExists, id)
	}
	if len(g.connects) >= MaxConnects {
		g.sweep(now, true) // expired records do not count, as in Redis
		if len(g.connects) >= MaxConnects {
			return errConnectsFull(id)
		}
	}
	rec = rec.Clone()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	g.connects[id] = memConnect{rec: rec, expires: now.Add(ttl)}
	return nil
}

// TakeConnect implements GrantStore.
func (g *memGrants) TakeConnect(ctx context.Context, id string) (ConnectRecord, error) {
	if err := checkID("connect id", id); err != nil {
		return ConnectRecord{}, err
	}
	if err := ctx.Err(); err != nil {
		return ConnectRecord{}, err
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.connects[id]
	delete(g.connects, id)
	if !ok || !now.Before(c.expires) {
		return ConnectRecord{}, fmt.Errorf("%w: connect %s", ErrNotFound, id)
	}
	return c.rec, nil // the stored copy: nothing else holds it now
}

// PutGrant implements GrantStore.
func (g *memGrants) PutGrant(ctx context.Context, principal, upstream string, sealed []byte) error {
	if err := checkGrant(principal, upstream, sealed); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	byPrincipal, ok := g.grants[upstream]
	if !ok {
		if len(g.grants) >= MaxUpstreams {
			return errUpstreamsFull(upstream)
		}
		byPrincipal = map[string][]byte{}
		g.grants[upstream] = byPrincipal
	}
	if _, ok := byPrincipal[principal]; !ok && len(byPrincipal) >= MaxGrantsPerUpstream {
		return errGrantsFull(principal, upstream)
	}
	byPrincipal[principal] = slices.Clone(sealed)
	return nil
}

// GetGrant implements GrantStore.
func (g *memGrants) GetGrant(ctx context.Context, principal, upstream string) ([]byte, error) {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	sealed, ok := g.grants[upstream][principal]
	if !ok {
		return nil, fmt.Errorf("%w: grant of %s for %s", ErrNotFound, principal, upstream)
	}
	return slices.Clone(sealed), nil
}

// DeleteGrant implements GrantStore. The upstream keeps its place among MaxUpstreams, as in Redis.
func (g *memGrants) DeleteGrant(ctx context.Context, principal, upstream string) error {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.grants[upstream], principal)
	return nil
}

// DeleteUpstreamGrants implements GrantStore.
func (g *memGrants) DeleteUpstreamGrants(ctx context.Context, upstream string) (int, error) {
	if err := checkID("upstream", upstream); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.grants[upstream])
	delete(g.grants, upstream)
	return n, nil
}

// Grants implements GrantStore.
func (g *memGrants) Grants(ctx context.Context, principal string) (map[string][]byte, error) {
	if err := checkID("principal", principal); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]byte{}
	for upstream, byPrincipal := range g.grants {
		if sealed, ok := byPrincipal[principal]; ok {
			out[upstream] = slices.Clone(sealed)
		}
	}
	return out, nil
}

// UpstreamGrants returns up to MaxListedGrants of upstream's grants, by principal, for an admin revoking the
// upstream at its authorization server.
func (g *memGrants) UpstreamGrants(ctx context.Context, upstream string) (map[string][]byte, error) {
	if err := checkID("upstream", upstream); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]byte{}
	for principal, sealed := range g.grants[upstream] {
		if len(out) == MaxListedGrants {
			break
		}
		out[principal] = slices.Clone(sealed)
	}
	return out, nil
}

// TryLock implements GrantStore.
func (g *memGrants) TryLock(ctx context.Context, key string, ttl time.Duration) (func(), bool, error) {
	if err := checkLock(key, ttl); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.sweep(now, false)
	if l, ok := g.locks[key]; ok && now.Before(l.expires) {
		return nil, false, nil
	}
	g.lockSeq++
	token := g.lockSeq
	g.locks[key] = memLock{token: token, expires: now.Add(ttl)}
	var once sync.Once
	unlock := func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			// Only our own lock: once ours lapsed, another holder's may be in its place.
			if l, ok := g.locks[key]; ok && l.token == token {
				delete(g.locks, key)
			}
		})
	}
	return unlock, true, nil
}

// PutUpstreamList implements GrantStore.
func (g *memGrants) PutUpstreamList(ctx context.Context, upstream string, list []byte, ttl time.Duration) error {
	if err := checkUpstreamList(upstream, list, ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	list = slices.Clone(list) // outside the lock: up to 4 MiB
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.sweep(now, false)
	if _, ok := g.lists[upstream]; !ok && len(g.lists) >= MaxUpstreams {
		g.sweep(now, true)
		if len(g.lists) >= MaxUpstreams {
			return errListsFull(upstream)
		}
	}
	g.lists[upstream] = memList{list: list, expires: now.Add(ttl)}
	return nil
}

// GetUpstreamList implements GrantStore.
func (g *memGrants) GetUpstreamList(ctx context.Context, upstream string) ([]byte, error) {
	if err := checkID("upstream", upstream); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	g.mu.Lock()
	l, ok := g.lists[upstream]
	if ok && !now.Before(l.expires) {
		delete(g.lists, upstream)
		ok = false
	}
	g.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: tool list of %s", ErrNotFound, upstream)
	}
	return slices.Clone(l.list), nil
}

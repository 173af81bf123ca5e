package routing

import (
	"sync"
	"sync/atomic"
)

// Own lists: the lists of some upstreams that someone sees instead of what the shared catalog has. Two kinds of
// someone have them: a person, whose own session of a per-user upstream lists it as their grant allows
// (persons.go), and a client session, whose per-client child announced a list of its own with list_changed
// (children.go). Either way they see a catalog built with their lists on the shared one, once per shared
// catalog, lazily; sessions without own lists see the shared catalog itself and pay nothing for this.

// maxOwnCatalogs bounds the catalogs kept for one holder of own lists (one per base catalog: the default's and
// the capability profiles' in use, or a person's catalogs under a session's).
const maxOwnCatalogs = 8

// ownLists are one holder's own lists, and the catalogs built with them.
type ownLists struct {
	mu  sync.Mutex
	own map[*upstreamServer]ownEntry
	// built is the holder's catalog by the catalog it was built on; a nil value means the base serves (the
	// lists are all of removed upstreams).
	built map[*catalog]*catalog
	// last is the catalog built last: the next one continues its generations, so that a client's cursor of the
	// list before a change is refused after it.
	last *catalog
	// live says whether there are lists of some upstream, for readers that take no lock (a session without
	// own lists sees the shared catalog at the cost of this load).
	live atomic.Bool
}

// ownEntry is the holder's lists of one upstream: the kinds it has (the others are the upstream's own).
type ownEntry struct {
	lists [numKinds][]item
	has   [numKinds]bool
}

func newOwnLists() *ownLists {
	return &ownLists{own: map[*upstreamServer]ownEntry{}, built: map[*catalog]*catalog{}}
}

// initLocked makes the maps of a zero ownLists (a session's, kept by value); o.mu is held.
func (o *ownLists) initLocked() {
	if o.own == nil {
		o.own, o.built = map[*upstreamServer]ownEntry{}, map[*catalog]*catalog{}
	}
}

// setAll records the holder's lists of up, every kind, and reports whether they changed.
func (o *ownLists) setAll(up *upstreamServer, lists [numKinds][]item) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.initLocked()
	if prev, ok := o.own[up]; ok && prev.has == [numKinds]bool{true, true, true, true} && sameLists(prev.lists, lists) {
		return false
	}
	o.own[up] = ownEntry{lists: lists, has: [numKinds]bool{true, true, true, true}}
	clear(o.built)
	o.live.Store(true)
	return true
}

// setKinds records the holder's lists of some kinds of up (fetched[k] for each k in kinds). A kind whose list
// equals what the holder would see without it (base[k]) is not kept: nothing differs. It reports whether
// anything changed.
func (o *ownLists) setKinds(up *upstreamServer, kinds []listKind, fetched, base [numKinds][]item) (changed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.initLocked()
	e := o.own[up]
	for _, k := range kinds {
		keep := !sameList(fetched[k], base[k])
		switch {
		case keep && (!e.has[k] || !sameList(e.lists[k], fetched[k])):
			e.lists[k], e.has[k], changed = fetched[k], true, true
		case !keep && e.has[k]:
			e.lists[k], e.has[k], changed = nil, false, true
		}
	}
	if e.has == [numKinds]bool{} {
		delete(o.own, up)
	} else {
		o.own[up] = e
	}
	if changed {
		clear(o.built)
	}
	o.live.Store(len(o.own) > 0)
	return changed
}

// drop forgets the holder's lists of up, reporting whether there were any.
func (o *ownLists) drop(up *upstreamServer) (had bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, had = o.own[up]; had {
		delete(o.own, up)
		clear(o.built)
	}
	o.live.Store(len(o.own) > 0)
	return had
}

// has reports whether the holder has own lists of up.
func (o *ownLists) has(up *upstreamServer) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.own[up]
	return ok
}

// listsOf returns the lists of up as the holder sees them under a profile: its own kinds over the upstream's.
func (o *ownLists) listsOf(up *upstreamServer, profile string) [numKinds][]item {
	lists := up.listsFor(profile)
	if o == nil || up.removed.Load() {
		return lists
	}
	o.mu.Lock()
	e, ok := o.own[up]
	o.mu.Unlock()
	if ok {
		for k := range lists {
			if e.has[k] {
				lists[k] = e.lists[k]
			}
		}
	}
	return lists
}

// catalogFor returns the catalog the holder sees where base is the catalog it would see otherwise (of its
// session's profile): one built with its own lists, once per base. under, when set, are lists the holder's
// own sit on (a person's, under one session's): they fill in the upstreams the holder has no lists of.
func (o *ownLists) catalogFor(r *Router, base *catalog, profile string, under *ownLists) *catalog {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.initLocked()
	if c, ok := o.built[base]; ok {
		if c == nil {
			return base
		}
		return c
	}
	if len(o.built) >= maxOwnCatalogs {
		clear(o.built)
	}
	// No shortcut when the lists equal the upstream's: base may have been built from lists the upstream has
	// replaced since (a reload in flight), and comparing with those would serve base's stale ones.
	live := false
	for up := range o.own {
		live = live || !up.removed.Load()
	}
	if !live {
		o.built[base] = nil
		return base
	}
	listsOf := func(up *upstreamServer) [numKinds][]item {
		lists := under.listsOf(up, profile)
		if e, ok := o.own[up]; ok && !up.removed.Load() {
			for k := range lists {
				if e.has[k] {
					lists[k] = e.lists[k]
				}
			}
		}
		return lists
	}
	// The same pins judge it as the shared catalog (a changed definition is withheld here too); the shared
	// catalog's rebuild settles drift and reports it, so this run only judges.
	r.buildMu.Lock()
	c := buildCatalogOf(r.upstreams(), base, listsOf, r.shape.Load(), r.newPinRun(r.ctx))
	r.buildMu.Unlock()
	continueGens(c, o.last)
	o.built[base], o.last = c, c
	return c
}

// continueGens makes c's generations follow last's, the holder's previous catalog: a list that differs from
// last's gets a generation above it, so that cursors into the list the client saw before are refused.
func continueGens(c, last *catalog) {
	if last == nil {
		return
	}
	for k := range c.gen {
		switch {
		case !sameItems(last.items[k], c.items[k]):
			c.gen[k] = max(c.gen[k], last.gen[k]+1)
		default:
			c.gen[k] = max(c.gen[k], last.gen[k])
		}
	}
}

// sameLists reports whether two sets of lists hold the same definitions in the same order.
func sameLists(a, b [numKinds][]item) bool {
	for k := range a {
		if !sameList(a[k], b[k]) {
			return false
		}
	}
	return true
}

// sameList reports whether two lists hold the same definitions in the same order.
func sameList(a, b []item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i].raw) != string(b[i].raw) {
			return false
		}
	}
	return true
}

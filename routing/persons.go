package routing

import (
	"bytes"
	"sync"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Per-person lists of per-user upstreams (issue 17: "per-user list differences after connecting are honoured
// for that user"). The catalog lists a per-user upstream as one person saw it (the cached lists, or a service
// credential's); a server that offers each person what their grant allows (GitHub's toolsets and scopes) lists
// otherwise for others. Each connected person's own session lists the upstream when it connects (cacheLists);
// where that differs from what the catalog has, the person's sessions see and call their own list instead,
// through a catalog of their own built on the shared one.

// maxPersons bounds the people whose own lists are kept on a replica; past it the oldest is forgotten, and falls
// back to the shared list until their session next connects.
const maxPersons = 1000

// maxPersonCatalogs bounds the catalogs kept for one person (one per base catalog: the default's and the
// capability profiles' in use).
const maxPersonCatalogs = 8

// persons holds the own lists of the people who have them, by principal.
type persons struct {
	mu    sync.Mutex
	m     map[string]*personLists
	order []string // oldest first, for eviction
}

// personLists are one person's own lists of per-user upstreams, and the catalogs built with them.
type personLists struct {
	mu  sync.Mutex
	own map[*Upstream][numKinds][]item
	// built is the person's catalog by the shared catalog it was built on; a nil value means the shared one
	// serves (the person's lists are all of removed upstreams).
	built map[*catalog]*catalog
}

// get returns principal's lists, creating them when create is set.
func (ps *persons) get(principal string, create bool) *personLists {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[principal]; p != nil || !create {
		return p
	}
	if ps.m == nil {
		ps.m = map[string]*personLists{}
	}
	if len(ps.order) >= maxPersons {
		delete(ps.m, ps.order[0])
		ps.order = ps.order[1:]
	}
	p := &personLists{own: map[*Upstream][numKinds][]item{}, built: map[*catalog]*catalog{}}
	ps.m[principal] = p
	ps.order = append(ps.order, principal)
	return p
}

// set records the person's own lists of up, and reports whether they changed.
func (p *personLists) set(up *Upstream, lists [numKinds][]item) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.own[up]; ok && sameLists(prev, lists) {
		return false
	}
	p.own[up] = lists
	clear(p.built)
	return true
}

// catalogFor returns the catalog the person sees where the shared one is base (of the session's profile): one
// built with their own lists, once per base.
func (p *personLists) catalogFor(r *Router, base *catalog, profile string) *catalog {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.built[base]; ok {
		if c == nil {
			return base
		}
		return c
	}
	if len(p.built) >= maxPersonCatalogs {
		clear(p.built)
	}
	// No shortcut when the person's lists equal the upstream's: base may have been built from lists the upstream
	// has replaced since (a reload in flight), and comparing with those would serve base's stale ones.
	live := false
	for up := range p.own {
		live = live || !up.removed.Load()
	}
	if !live {
		p.built[base] = nil
		return base
	}
	listsOf := func(up *Upstream) [numKinds][]item {
		if own, ok := p.own[up]; ok && !up.removed.Load() {
			return own
		}
		return up.listsFor(profile)
	}
	// The same pins judge it as the shared catalog (a changed definition is withheld here too); the shared
	// catalog's rebuild settles drift and reports it, so this run only judges.
	r.buildMu.Lock()
	c := buildCatalogOf(r.upstreams(), base, listsOf, r.shape.Load(), r.newPinRun(r.ctx))
	r.buildMu.Unlock()
	p.built[base] = c
	return c
}

// sameLists reports whether two sets of lists hold the same definitions in the same order.
func sameLists(a, b [numKinds][]item) bool {
	for k := range a {
		if len(a[k]) != len(b[k]) {
			return false
		}
		for i := range a[k] {
			if !bytes.Equal(a[k][i].raw, b[k][i].raw) {
				return false
			}
		}
	}
	return true
}

// ownListsChanged makes the person's sessions see their own lists: they use them from their next request and
// hear list_changed now.
func (r *Router) ownListsChanged(principal string, p *personLists) {
	for _, s := range append(r.allSessions(), r.pooledSessions()...) {
		if s.params.Principal != principal {
			continue
		}
		s.person.Store(p)
		for _, k := range []listKind{kindTools, kindPrompts, kindResources} {
			s.notify(jsonrpc.AppendNotification(nil, k.changedMethod(), nil))
		}
	}
}

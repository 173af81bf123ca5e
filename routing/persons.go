package routing

import (
	"sync"
)

// Per-person lists of per-user upstreams (issue 17: "per-user list differences after connecting are honoured
// for that user"). The catalog lists a per-user upstream as one person saw it (the cached lists, or a service
// credential's); a server that offers each person what their grant allows (GitHub's toolsets and scopes) lists
// otherwise for others. Each connected person's own session lists the upstream when it connects (cacheLists);
// where that differs from what the catalog has, the person's sessions see and call their own list instead,
// through a catalog of their own built on the shared one (ownLists, ownlists.go).

// maxPersons bounds the people whose own lists are kept on a replica; past it the oldest is forgotten, and falls
// back to the shared list until their session next connects.
const maxPersons = 1000

// persons holds the own lists of the people who have them, by principal.
type persons struct {
	mu    sync.Mutex
	m     map[string]*ownLists
	order []string // oldest first, for eviction
}

// get returns principal's lists, creating them when create is set.
func (ps *persons) get(principal string, create bool) *ownLists {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[principal]; p != nil || !create {
		return p
	}
	if ps.m == nil {
		ps.m = map[string]*ownLists{}
	}
	if len(ps.order) >= maxPersons {
		delete(ps.m, ps.order[0])
		ps.order = ps.order[1:]
	}
	p := newOwnLists()
	ps.m[principal] = p
	ps.order = append(ps.order, principal)
	return p
}

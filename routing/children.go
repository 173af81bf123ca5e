package routing

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Lists of per-client children (issue 19, item 5). A per-client upstream is listed through its template session
// (or its capability profile's, profile.go), but a client's own upstream session is a server of its own: one
// whose tools come and go as the session goes on announces it with list_changed, and only that client's session
// sees the change. The session then fetches the announced lists through its own upstream session and, where
// they differ from what its catalog has, sees them instead (ownLists, ownlists.go) and hears list_changed; where
// they equal it (server-everything announces its capability-dependent tools right after initialize, which its
// profile's template lists too), nothing is kept and the session keeps the shared catalog.

// listSettle is how long a burst of list_changed is let settle before the lists are fetched once.
const listSettle = 50 * time.Millisecond

// relistChild fetches what l's upstream announced, once the announcements settle, until none is left. It runs
// on the link's goroutine group and ends with it.
func (cl *clientLinks) relistChild(s *Session, l *link) {
	t := time.NewTimer(listSettle)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.ctx.Done():
			return
		}
		l.mu.Lock()
		dirty, conn := l.relist, l.conn
		l.relist = [numKinds]bool{}
		if dirty == ([numKinds]bool{}) {
			l.relisting = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		if l.up.perUser() {
			s.r.grants.cacheLists(s, l) // the person's lists, kept for all their sessions and in the store
		} else if conn != nil {
			s.links.relist(s, l, conn.Server.Capabilities, dirty)
		}
		t.Reset(listSettle)
	}
}

// relist fetches the dirty lists through the session's own upstream session l and makes them the session's.
func (cl *clientLinks) relist(s *Session, l *link, serverCaps json.RawMessage, dirty [numKinds]bool) {
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(serverCaps, &caps)
	ctx, cancel := context.WithTimeout(l.ctx, l.up.timeout())
	defer cancel()
	var kinds []listKind
	var fetched [numKinds][]item
	for k := range numKinds {
		if !dirty[k] {
			continue
		}
		if _, ok := caps[k.capability()]; ok {
			items, err := l.up.fetchFrom(ctx, l, k)
			if err != nil {
				l.log.Warn("the client's own upstream session announced a list change, and listing failed", "method", k.method(), "err", err)
				continue
			}
			fetched[k] = items
		}
		kinds = append(kinds, k)
	}
	if len(kinds) > 0 {
		s.links.setChildLists(s, l.up, kinds, fetched)
	}
}

// setChildLists makes the lists of some kinds of up, as the session's own upstream session has them, the ones
// the session sees, and tells the client of each list that changed as it sees it.
func (cl *clientLinks) setChildLists(s *Session, up *upstreamServer, kinds []listKind, fetched [numKinds][]item) {
	before := s.catalog()
	if !s.children.setKinds(up, kinds, fetched, s.person.Load().listsOf(up, s.profile)) {
		return
	}
	s.links.notifyChanged(s, before, s.catalog())
}

// childGone forgets the lists of up's child when the session's own upstream session of it closed (idle): the
// next one starts afresh, listing what the template does.
func (cl *clientLinks) childGone(s *Session, up *upstreamServer) {
	before := s.catalog()
	if s.children.drop(up) {
		s.links.notifyChanged(s, before, s.catalog())
	}
}

// notifyChanged tells the client of the lists that differ between two catalogs it saw, as its endpoint shows
// them: one notification per list, one for both resource lists.
func (cl *clientLinks) notifyChanged(s *Session, before, after *catalog) {
	if before == after {
		return
	}
	resources := false
	for k := range numKinds {
		if !viewChanged(before, after, k, s.params.Endpoint) {
			continue
		}
		if k == kindTemplates && resources {
			continue
		}
		resources = resources || k == kindResources
		s.notify(jsonrpc.AppendNotification(nil, k.changedMethod(), nil))
	}
}

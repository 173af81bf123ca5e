package routing

import (
	"sync"
	"sync/atomic"
)

// pendingTable is a link's requests in flight by upstream id (design §4), and the counter that mints the ids.
// Its map is guarded by the link's mu, which guards the link's state too: a request is published only while the
// link is ready (link.add), and lost takes the whole table as the connection goes.
type pendingTable struct {
	mu     *sync.Mutex // the link's
	nextID atomic.Int64
	m      map[int64]pending
}

// mint returns a fresh upstream id.
func (pt *pendingTable) mint() int64 {
	id := pt.nextID.Add(1)
	if id >= maxSafeID { // unreachable in practice; wrap rather than exceed 2^53
		pt.nextID.Store(1)
		id = 1
	}
	return id
}

// take removes a pending request; the caller that gets it owns its completion.
func (pt *pendingTable) take(id int64) pending {
	pt.mu.Lock()
	c := pt.m[id]
	delete(pt.m, id)
	pt.mu.Unlock()
	return c
}

// takeIf removes c if it is still the call pending under its id: a parked call (modern.go) is replaced under the
// same id, and the timer or cancellation of the replaced one must not take its successor.
func (pt *pendingTable) takeIf(c *call) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.m[c.upID] != c {
		return false
	}
	delete(pt.m, c.upID)
	return true
}

// swap puts next in the place of prev under their shared upstream id, reporting false when prev is no longer
// pending (its answer, timeout or cancellation won the race).
func (pt *pendingTable) swap(prev, next *call) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.m[prev.upID] != prev {
		return false
	}
	pt.m[prev.upID] = next
	return true
}

// peek returns the client call pending under id, or nil (none, or one of the gateway's own requests).
func (pt *pendingTable) peek(id int64) *call {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	c, _ := pt.m[id].(*call)
	return c
}

// soleCaller returns a call in flight on this link when all of them belong to one session, or nil when there are
// none or they belong to several:
// the last resort for routing a server→client request that arrived with no stream association (design §3).
func (pt *pendingTable) soleCaller() *call {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	var found *call
	n := 0
	for _, p := range pt.m {
		c, ok := p.(*call)
		if !ok || c.detached() {
			continue // a parked call waits for its client; its upstream waits for the answers it asked for
		}
		if found != nil && found.session != c.session {
			return nil
		}
		found = c
		n++
	}
	if found != nil && found.session.era.modern() && n > 1 {
		// A stateless session serves many clients at once: two calls of it are two clients, and guessing
		// would show one client another's request.
		return nil
	}
	return found
}

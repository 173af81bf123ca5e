package state

import (
	"fmt"
	"slices"
	"time"
)

// What per-user upstream OAuth (issue 17) keeps in the shared state, so that every replica sees it: the state of
// each connect link in flight, each principal's grant for each upstream, a lock per grant so that a refresh runs
// on one replica at a time, and the tool list of each upstream as a connected user last saw it. Memory
// (memory_grants.go) and Redis (redis_grants.go) implement GrantStore (state.go); the Redis keys are in the
// package documentation's table. Why they are laid out so:
//
//   - Connect records are keys with PX, so Redis expires them, plus a sorted set of live ids that counts
//     them against MaxConnects; all under the one hash tag {connects}, so that the scripts that touch a record and
//     the set are legal in Cluster. Connects are few and short-lived: one slot holds them well.
//   - Grants are one hash per upstream, <prefix>grants:{<upstream>}, field = principal: the per-upstream bound is
//     one script and revoking an upstream one UNLINK. Grants(principal) reads a registry of the upstreams with
//     grants, <prefix>{grant-upstreams}, then that principal's field of each hash: a page load's worth of work,
//     over the few upstreams a deployment configures.
//
// The grants hashes and the registry live in different slots, so no script can change both at once. The registry
// is kept a superset of the upstreams with grants by ordering alone: PutGrant writes the grant, then adds its
// upstream (it also reserves the upstream before, for the bound); DeleteUpstreamGrants removes the upstream, then
// deletes the hash. For a grant to outlive its upstream's entry, its write would have to come after the hash's
// deletion and its add before the entry's removal, which those two orders rule out. An entry may outlive its
// grants (all deleted one by one, or a race the other way round); that costs Grants a look-up that finds nothing.

// Bounds of the grant tables. Past a count bound a new entry is refused with ErrFull; past a size bound the
// argument is refused with ErrInvalid.
const (
	// MaxConnects bounds the connect records live at once, in the whole deployment. Callers rate-limit links per
	// principal (RateLimiter) so that one user cannot use them all up.
	MaxConnects = 100_000
	// MaxConnectTTL bounds a connect record's ttl: a link is meant to be followed within minutes.
	MaxConnectTTL = time.Hour
	// MaxConnectPending bounds a connect record's Pending: the OAuth flow's sealed state and verifier.
	MaxConnectPending = 8 << 10
	// MaxGrantsPerUpstream bounds the principals holding a grant for one upstream.
	MaxGrantsPerUpstream = 100_000
	// MaxUpstreams bounds the upstreams that hold grants. An upstream counts from its first grant until
	// DeleteUpstreamGrants, even once its grants were deleted one by one. A Memory also keeps the tool lists of at
	// most this many upstreams (in Redis each list is a key that expires: time bounds them).
	MaxUpstreams = 10_000
	// MaxGrantSize bounds a sealed grant: encrypted access, refresh and ID tokens, with their metadata.
	MaxGrantSize = 16 << 10
	// MaxListedGrants bounds UpstreamGrants: an admin revoking an upstream revokes at most this many grants at
	// its authorization server (all of them are deleted).
	MaxListedGrants = 10_000
	// MaxUpstreamListSize bounds a cached tool list.
	MaxUpstreamListSize = 4 << 20
)

// ConnectRecord binds a connect link (in-band, through URL elicitation) to who asked and for what. A replica
// stores it when it sends the link; whichever replica the browser reaches takes it, once.
type ConnectRecord struct {
	// Principal is the subject the link was made for: the browser must sign in as this subject.
	Principal string `json:"principal"`
	// Upstream is the upstream the grant is for.
	Upstream string `json:"upstream"`
	// Session is the MCP session to notify when the flow completes ("" for none).
	Session string `json:"session,omitempty"`
	// ElicitationID is the URL elicitation's id, for notifications/elicitation/complete ("" for none).
	ElicitationID string `json:"elicitationId,omitempty"`
	// Created is set by PutConnect when zero.
	Created time.Time `json:"created"`
	// Pending is opaque to the store: the OAuth flow's state, PKCE verifier and the like, sealed by the caller.
	Pending []byte `json:"pending,omitempty"`
}

// Clone returns a deep copy of r: nothing in it is shared with r.
func (r ConnectRecord) Clone() ConnectRecord {
	r.Pending = slices.Clone(r.Pending)
	return r
}

// checkConnect validates PutConnect's arguments.
func checkConnect(id string, rec ConnectRecord, ttl time.Duration) error {
	if err := checkID("connect id", id); err != nil {
		return err
	}
	if err := checkPrincipalUpstream(rec.Principal, rec.Upstream); err != nil {
		return err
	}
	if len(rec.Session) > maxIDLen || len(rec.ElicitationID) > maxIDLen {
		return fmt.Errorf("%w: connect %s: session of length %d, elicitation id of length %d",
			ErrInvalid, id, len(rec.Session), len(rec.ElicitationID))
	}
	if len(rec.Pending) > MaxConnectPending {
		return fmt.Errorf("%w: connect %s: %d bytes pending, at most %d", ErrInvalid, id, len(rec.Pending), MaxConnectPending)
	}
	if ttl <= 0 || ttl > MaxConnectTTL {
		return fmt.Errorf("%w: connect %s: ttl %v (0 to %v)", ErrInvalid, id, ttl, MaxConnectTTL)
	}
	return nil
}

func checkPrincipalUpstream(principal, upstream string) error {
	if err := checkID("principal", principal); err != nil {
		return err
	}
	return checkID("upstream", upstream)
}

func checkGrant(principal, upstream string, sealed []byte) error {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return err
	}
	if len(sealed) == 0 || len(sealed) > MaxGrantSize {
		return fmt.Errorf("%w: grant of %d bytes (1 to %d)", ErrInvalid, len(sealed), MaxGrantSize)
	}
	return nil
}

func checkLock(key string, ttl time.Duration) error {
	if err := checkID("lock key", key); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: lock %q: ttl %v", ErrInvalid, key, ttl)
	}
	return nil
}

func checkUpstreamList(upstream string, list []byte, ttl time.Duration) error {
	if err := checkID("upstream", upstream); err != nil {
		return err
	}
	if len(list) == 0 || len(list) > MaxUpstreamListSize {
		return fmt.Errorf("%w: tool list of %s: %d bytes (1 to %d)", ErrInvalid, upstream, len(list), MaxUpstreamListSize)
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: tool list of %s: ttl %v", ErrInvalid, upstream, ttl)
	}
	return nil
}

func errConnectsFull(id string) error {
	return fmt.Errorf("%w: %d connect links are the most in flight: connect %s refused", ErrFull, MaxConnects, id)
}

func errGrantsFull(principal, upstream string) error {
	return fmt.Errorf("%w: %d grants are the most an upstream keeps: grant of %s for %s refused",
		ErrFull, MaxGrantsPerUpstream, principal, upstream)
}

func errUpstreamsFull(upstream string) error {
	return fmt.Errorf("%w: %d upstreams are the most that hold grants: first grant for %s refused "+
		"(DeleteUpstreamGrants of upstreams gone makes room)", ErrFull, MaxUpstreams, upstream)
}

func errListsFull(upstream string) error {
	return fmt.Errorf("%w: %d upstreams are the most whose tool list is cached: list of %s refused",
		ErrFull, MaxUpstreams, upstream)
}

package state

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"
)

// Errors. Implementations wrap them (test with errors.Is), adding what and where.
var (
	// ErrNotFound: no session with that id (never created, deleted, or expired).
	ErrNotFound = errors.New("state: not found")
	// ErrExists: Create with an id already in use.
	ErrExists = errors.New("state: already exists")
	// ErrClosed: the event stream was closed. Tail returns it once every event before Close has been read;
	// Append returns it for a closed stream.
	ErrClosed = errors.New("state: stream closed")
	// ErrInvalid: a malformed argument (an empty id, an event id of another stream, a rate of zero, ...).
	ErrInvalid = errors.New("state: invalid argument")
	// ErrUnavailable: the backing store could not be reached or could not answer in time. The error also wraps
	// the cause. Callers degrade (refuse, or serve what they hold locally); the store recovers by itself.
	ErrUnavailable = errors.New("state: store unavailable")
	// ErrFull: a bounded table is at its maximum (MaxPins pins), so nothing was added. Entries already there can
	// still be read, replaced and deleted; deleting makes room.
	ErrFull = errors.New("state: store full")
)

// SessionRecord is what any replica needs to serve a client session it did not create (design §3): the routing
// session's parameters and the state the client changed since.
type SessionRecord struct {
	// ID is the session id (the Mcp-Session-Id header).
	ID string `json:"id"`
	// Principal is the authenticated subject the session is bound to ("" without auth).
	Principal string `json:"principal,omitempty"`
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Capabilities and ClientInfo are the client's, from initialize, verbatim.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	ClientInfo   json.RawMessage `json:"clientInfo,omitempty"`
	// Endpoint is the catalog endpoint the session was opened on ("" for the whole catalog).
	Endpoint string `json:"endpoint,omitempty"`
	// LogLevel is the level the client set with logging/setLevel ("" for none).
	LogLevel string `json:"logLevel,omitempty"`
	// Subscriptions are the resource URIs the client subscribed to.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// UpstreamSessions maps an upstream's name to its Mcp-Session-Id for this client, for per-client HTTP
	// upstreams, so another replica can go on using the same upstream session.
	UpstreamSessions map[string]string `json:"upstreamSessions,omitempty"`
	// Created is set by Create when zero. Touched is set by Create, Update and Touch: the record expires a
	// session TTL after it.
	Created time.Time `json:"created"`
	Touched time.Time `json:"touched"`
}

// Clone returns a deep copy of r: nothing in it is shared with r.
func (r SessionRecord) Clone() SessionRecord {
	r.Capabilities = slices.Clone(r.Capabilities)
	r.ClientInfo = slices.Clone(r.ClientInfo)
	r.Subscriptions = slices.Clone(r.Subscriptions)
	r.UpstreamSessions = maps.Clone(r.UpstreamSessions)
	return r
}

// SessionStore holds session records so that any replica can serve any session. A record lives a session TTL
// (the idle timeout, WithSessionTTL) after it was last created, updated or touched.
type SessionStore interface {
	// Create stores a new record; ErrExists if rec.ID is taken.
	Create(ctx context.Context, rec SessionRecord) error
	// Get returns the record; ErrNotFound if there is none.
	Get(ctx context.Context, id string) (SessionRecord, error)
	// Update is an atomic read-modify-write: fn gets a copy of the current record and changes it in place; the
	// result is stored unless fn returns an error, which Update returns as is. fn may run more than once
	// (optimistic concurrency) and must not call the store. Changes to ID are ignored.
	Update(ctx context.Context, id string, fn func(*SessionRecord) error) error
	// Touch marks the session used now and restarts its TTL; ErrNotFound if there is none.
	Touch(ctx context.Context, id string) error
	// Delete removes the record. Deleting a missing record is not an error. The session's event logs are
	// left to expire.
	Delete(ctx context.Context, id string) error
}

// Event is one logged SSE event.
type Event struct {
	// ID is the event's SSE id, "<stream>_<position>" (see FormatEventID).
	ID string
	// Data is the event's payload. Do not modify it.
	Data []byte
}

// EventLog keeps the recent events of each SSE stream of each session, so that a client can resume a stream with
// Last-Event-ID on any replica and get what it missed from that stream only. Logs are bounded in length
// (WithEventLog's maxLen; Redis trims approximately, keeping at least the last maxLen) and in age (a log is
// dropped a TTL after its last Append or Close).
type EventLog interface {
	// Append logs data as the next event of the stream and returns its id; ErrClosed after Close.
	Append(ctx context.Context, session string, stream int64, data []byte) (id string, err error)
	// After returns up to max (all retained when max <= 0) events logged after afterID ("" for the start of
	// the log), oldest first. Events already trimmed are gone: resumption is best effort.
	After(ctx context.Context, session string, stream int64, afterID string, max int) ([]Event, error)
	// Tail is After that waits: when nothing follows afterID it waits up to block (not at all when block <= 0,
	// never beyond ctx's deadline) for an Append, and returns nil, nil if none came. Once the stream is closed
	// and every event before Close has been returned, Tail returns ErrClosed at once.
	Tail(ctx context.Context, session string, stream int64, afterID string, block time.Duration) ([]Event, error)
	// Close marks the stream finished: tailers stop (ErrClosed) and Append refuses. Closing twice is harmless.
	Close(ctx context.Context, session string, stream int64) error
}

// Bus delivers messages between replicas: per-session control ("session:<id>"), per-replica inboxes
// ("replica:<id>"). Delivery is at most once, to the subscribers present when the message arrives: a message
// published while a Redis connection is down is lost.
type Bus interface {
	// Publish sends msg to every current subscriber of channel, on every replica.
	Publish(ctx context.Context, channel string, msg []byte) error
	// Subscribe returns a channel of the messages published on channel from now on, and a function that ends
	// the subscription and closes the channel (call it exactly when done; calling it again is harmless). The
	// channel is bounded (WithBusBuffer): a subscriber that falls behind loses messages (counted by Dropped)
	// rather than holding up others. Received messages are shared: do not modify them.
	Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error)
	// Dropped counts the messages lost to full subscriber channels since the bus was made.
	Dropped() uint64
}

// RateLimiter enforces per-principal limits across replicas.
type RateLimiter interface {
	// Allow takes a token from key's bucket (rate tokens a second, at most burst of them, full at first). When
	// the bucket is empty it returns false and how long until a token is there.
	Allow(ctx context.Context, key string, rate float64, burst int) (ok bool, retryAfter time.Duration, err error)
	// Acquire takes one of limit concurrent leases on key, for at most ttl: release gives it back, and a lease
	// nobody released (a crashed replica) lapses after ttl. ok is false, with a nil release, when limit leases
	// are out. Choose ttl above the longest call it guards.
	Acquire(ctx context.Context, key string, limit int, ttl time.Duration) (release func(), ok bool, err error)
}

// ReplicaRegistry records which replica addresses are alive, so that a replica sends a request on only to an address
// a replica of this deployment registered: an address read from anything a client sent is never trusted alone.
type ReplicaRegistry interface {
	// RegisterReplica records url as alive for ttl; registering again extends it.
	RegisterReplica(ctx context.Context, url string, ttl time.Duration) error
	// ReplicaRegistered reports whether url is registered and its registration has not lapsed.
	ReplicaRegistered(ctx context.Context, url string) (bool, error)
	// Replicas lists the replicas whose registration has not lapsed, with when each last registered, sorted by
	// URL; at most MaxReplicas.
	Replicas(ctx context.Context) ([]ReplicaRecord, error)
}

// ReplicaRecord is one live replica's registration.
type ReplicaRecord struct {
	URL string
	// Registered is when the replica last registered (by its own clock, in Redis): when it was last heard from.
	Registered time.Time
}

// MaxReplicas bounds the replicas Replicas lists, and so the registry's index in Redis: far more than a
// deployment runs, so only a flood of registrations meets it (the earliest to lapse are dropped first).
const MaxReplicas = 1024

// PinStore keeps the pinned hash of each tool's and prompt's definition, shared by every replica: the first
// definition seen is trusted, later ones are compared with it, and an admin's approval replaces it.
//
// Keys are opaque to the store (the caller builds "<upstream>\x00<kind>\x00<name>"; any bytes are kept as they
// are), non-empty and at most 4096 bytes; hashes are non-empty and at most 512 bytes (ErrInvalid otherwise). A
// store keeps at most MaxPins pins: a new one past that is refused with ErrFull. Pins never expire. Redis keeps
// them until they are deleted, so every replica, and a replica restarted, sees the same pins; Memory keeps them
// for the life of its process, so a restart forgets every pin and trusts the first definitions it sees again.
type PinStore interface {
	// PinIfAbsent pins hash under key unless a pin is there, and returns the pin in force: the existing one, or
	// hash when it was absent. Atomic across replicas: two replicas that see different definitions first agree
	// on one.
	PinIfAbsent(ctx context.Context, key, hash string) (pinned string, err error)
	// SetPin replaces the pin of key (an approval).
	SetPin(ctx context.Context, key, hash string) error
	// DeletePin removes the pin of key (the item is gone and an admin forgets it). Deleting a missing pin is not
	// an error.
	DeletePin(ctx context.Context, key string) error
	// Pins returns every pin.
	Pins(ctx context.Context) (map[string]string, error)
}

// GrantStore keeps what per-user upstream OAuth shares between replicas (issue 17; grants.go has the bounds, and
// why the Redis keys are laid out as they are): the single-use state of each connect link, each principal's sealed
// grant for each upstream, a lock so that one replica at a time refreshes a grant, and the tool list of each
// upstream as a connected user last saw it. Ids, principals, upstreams and lock keys are opaque, non-empty and at
// most 512 bytes (ErrInvalid otherwise). Grants and connect records are sealed by the caller: the store never sees
// a token in the clear. What the methods return is the caller's to change.
type GrantStore interface {
	// PutConnect stores rec under id for ttl (0 < ttl <= MaxConnectTTL); ErrExists if id is taken by a live record,
	// ErrFull when MaxConnects records are live. rec needs Principal and Upstream; Created is set when zero.
	PutConnect(ctx context.Context, id string, rec ConnectRecord, ttl time.Duration) error
	// TakeConnect returns id's record and deletes it, in one atomic step: of callers racing on any replicas one
	// gets it, and the others ErrNotFound, as does any caller once the record expired. So a link works once.
	TakeConnect(ctx context.Context, id string) (ConnectRecord, error)
	// PutGrant stores (or replaces) principal's sealed grant for upstream (1 to MaxGrantSize bytes). It never
	// expires: tokens expire on their own and the caller deletes grants. ErrFull when the upstream holds
	// MaxGrantsPerUpstream grants, or when it is new and MaxUpstreams upstreams hold grants.
	PutGrant(ctx context.Context, principal, upstream string, sealed []byte) error
	// GetGrant returns principal's sealed grant for upstream; ErrNotFound if there is none.
	GetGrant(ctx context.Context, principal, upstream string) ([]byte, error)
	// DeleteGrant removes principal's grant for upstream (a disconnect). Deleting a missing grant is not an
	// error.
	DeleteGrant(ctx context.Context, principal, upstream string) error
	// DeleteUpstreamGrants removes every grant for upstream (an admin revoking it), returns how many there were,
	// and frees the upstream's place among MaxUpstreams. A grant stored while it runs may survive it.
	DeleteUpstreamGrants(ctx context.Context, upstream string) (int, error)
	// Grants returns principal's grants, by upstream (empty when none).
	Grants(ctx context.Context, principal string) (map[string][]byte, error)
	// UpstreamGrants returns up to MaxListedGrants of upstream's grants, by principal (empty when none).
	UpstreamGrants(ctx context.Context, upstream string) (map[string][]byte, error)
	// TryLock takes the lock key for at most ttl, unless it is held: ok is false, with a nil unlock, when another
	// caller (on any replica) holds it. unlock releases it if it is still this caller's (not once it lapsed and
	// another took it); calling it again is harmless. A lock nobody unlocked (a crashed replica) lapses after ttl.
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(), ok bool, err error)
	// PutUpstreamList caches upstream's tool list (1 to MaxUpstreamListSize bytes, opaque) for ttl, replacing the
	// one there. A Memory refuses a list of a new upstream with ErrFull when it caches MaxUpstreams lists.
	PutUpstreamList(ctx context.Context, upstream string, list []byte, ttl time.Duration) error
	// GetUpstreamList returns upstream's cached tool list; ErrNotFound if there is none, or it expired.
	GetUpstreamList(ctx context.Context, upstream string) ([]byte, error)
}

// Store is every part of the shared state, as Memory and Redis provide it.
type Store interface {
	SessionStore
	EventLog
	Bus
	RateLimiter
	ReplicaRegistry
	PinStore
	GrantStore
	RegistrationStore
	TaskStore
	TokenStore
	// Ping reports whether the store can be used (for /readyz); an error wraps ErrUnavailable.
	Ping(ctx context.Context) error
	// Shutdown ends subscriptions (closing their channels) and background work. It does not close a Redis
	// client, which belongs to the caller.
	Shutdown()
}

// Both implementations are complete.
var (
	_ Store = (*Memory)(nil)
	_ Store = (*Redis)(nil)
)

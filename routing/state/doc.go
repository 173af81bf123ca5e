// Package state is the shared state that lets any replica of the gateway serve any session (design §7): client
// session records, per-stream SSE event logs for Last-Event-ID resumption, cross-replica message delivery,
// per-principal rate and concurrency limits, the registry of live replicas, the pinned hashes of tool and
// prompt definitions, what per-user upstream OAuth shares (connect links, sealed grants, refresh locks, the
// gateway's sealed client registrations), and the sealed tokens of id-jag upstreams.
//
// Each concern is a small interface (SessionStore, EventLog, Bus, RateLimiter, ReplicaRegistry, PinStore,
// GrantStore, RegistrationStore, TaskStore, TokenStore); Store is all of them. Two implementations satisfy every
// one of them and pass the same conformance suite, each made of one store per concern (memSessions,
// redisSessions, ...) that it embeds:
//
//   - Memory (NewMemory): the single-replica default. Nothing to run, nothing shared.
//   - Redis (NewRedis): go-redis v9 over a redis.UniversalClient, so a single node, Sentinel (failover) and
//     Cluster options all work.
//
// # What Memory forgets
//
// Memory holds everything in the gateway's process, so a restart forgets all of it: sessions (clients must
// initialize again), event logs, limits, replica registrations, pins, cached embeddings, connect links in flight
// (their flows fail and the user follows a new link), refresh locks, cached upstream tool lists, and every
// upstream grant and client registration: each user connects to each user-oauth upstream again, and the gateway
// registers again where it registered. The tokens of id-jag upstreams go too, which costs only an exchange per
// person and upstream. Forgotten pins matter most: after a restart the first definition of each
// tool and prompt is trusted again, so a definition that changed while the gateway was down is pinned as if it
// were the original, with no drift reported. Use a lock file, or Redis (whose pins never expire and outlive every
// replica), where that matters.
//
// # Keys in Redis
//
// Every key and pub/sub channel starts with a prefix (default "switchboard:"). A session's keys carry its id as a
// hash tag, so that in Cluster they land in one slot and the scripts and transactions that touch them are legal:
//
//	<prefix>session:{<session id>}            hash: "rec" (the SessionRecord as JSON), "touched" (Unix ms);
//	                                           PEXPIRE = the session TTL, refreshed by Create, Update, Touch
//	<prefix>events:{<session id>}:<stream>    stream: entries {"d": <event data>} and a last {"end": "1"} written
//	                                           by Close; XADD MAXLEN ~ <max>; PEXPIRE = event TTL, refreshed on
//	                                           Append and Close
//	<prefix>rate:{<key>}                      hash: "tokens" (float), "ts" (µs, Redis TIME): a token bucket
//	<prefix>lease:{<key>}                     sorted set: lease id → expiry (ms, Redis TIME)
//	<prefix>replica:<hash of URL>             string: the replica's URL; PX = its registration TTL
//	<prefix>replicas                          sorted set: registered URLs by when they last registered (ms), pruned
//	                                           on each registration, at most MaxReplicas; Replicas checks each
//	                                           URL's key
//	<prefix>{pins}                            hash: pin key → pinned definition hash; no expiry (one key, one
//	                                           slot; HGETALL lists it, at most MaxPins fields)
//	<prefix>vector:<key>                      string: an embedding (float32 little-endian) of a text, by provider,
//	                                           model and text hash (routing/search/hybrid); PX = VectorTTL,
//	                                           refreshed by reads
//	<prefix>{connects}:<connect id>           hash: "rec" (a ConnectRecord as JSON), "call" (the nonce of the
//	                                           PutConnect that stored it); PX = its ttl (at most MaxConnectTTL)
//	<prefix>{connects}                        sorted set: connect id → expiry (ms, Redis TIME), counting live
//	                                           records against MaxConnects (one hash tag with the records, so the
//	                                           scripts touching both are legal in Cluster)
//	<prefix>grants:{<upstream>}               hash: principal → sealed grant; no expiry; at most
//	                                           MaxGrantsPerUpstream fields
//	<prefix>{grant-upstreams}                 set: the upstreams whose grants hash may have fields (a superset:
//	                                           written after a grant, removed before a hash; see grants.go); no
//	                                           expiry; at most MaxUpstreams members
//	<prefix>lock:{<key>}                      string: the holder's random token; PX = the lock's ttl
//	<prefix>upstreamlist:{<upstream>}         string: an upstream's cached tool list; PX = its ttl
//	<prefix>registrations:{<upstream>}        hash: issuer → the gateway's sealed client registration there; no
//	                                           expiry; at most MaxRegistrationsPerUpstream fields
//	<prefix>tokens:{<upstream>}:<hash>        string: a person's sealed token for an id-jag upstream, the hash the
//	                                           hex SHA-256 of the principal; PX = until shortly before the token
//	                                           expires
//	<prefix>bus:<channel>                     pub/sub channel (not a key; PUBLISH reaches every Cluster node)
//
// Scripts run by EVALSHA and fall back to EVAL when the server does not know them (after a restart or failover).
// Time in the limiter scripts is the server's (TIME), so replicas with skewed clocks share one notion of now.
//
// # Errors
//
// ErrNotFound, ErrExists, ErrClosed, ErrInvalid and ErrFull report what the data says. Any failure to reach or
// use Redis (refused connection, timeout, failover in progress, a cancelled context) is returned wrapped in
// ErrUnavailable, together with the underlying error, so callers can test errors.Is(err, ErrUnavailable) and
// degrade. go-redis redials on its own: once Redis is back, the same Redis value works again, with no restart.
package state

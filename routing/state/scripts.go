package state

import "github.com/redis/go-redis/v9"

// The Lua scripts. Each touches one key (KEYS[1]), or keys of one hash tag, so each is legal in Cluster. Run by
// EVALSHA, falling back to EVAL when the server does not have them (redis.Script.Run).

// createSession: ARGV = record JSON, touched (ms), ttl (ms). 1 if created, 0 if the id exists.
var createSession = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'rec', ARGV[1], 'touched', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// touchSession: ARGV = ttl (ms), touched (ms). 1 if touched, 0 if there is no such session.
var touchSession = redis.NewScript(`
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'touched', ARGV[2])
return 1
`)

// appendEvent: ARGV = data, maxlen, ttl (ms). The new entry's id, or false when the stream was closed (its last
// entry is the "end" marker).
var appendEvent = redis.NewScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 and last[1][2][1] == 'end' then return false end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'd', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
`)

// closeEvents: ARGV = maxlen, ttl (ms). Writes the "end" marker unless it is there already.
var closeEvents = redis.NewScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if not (#last > 0 and last[1][2][1] == 'end') then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'end', '1')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// tokenBucket: ARGV = rate (tokens/s), burst. Returns {1, 0} when a token was taken, else {0, µs to wait}.
// Time is the server's. The key lives as long as the bucket takes to fill up, then a full bucket is implied.
var tokenBucket = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1])
local ts = tonumber(v[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then tokens = tokens + (now - ts) * rate / 1000000 end
if tokens > burst then tokens = burst end
local ok = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) * 1000000 / rate)
  if wait < 1 then wait = 1 end
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {ok, wait}
`)

// acquireLease: ARGV = limit, ttl (ms), lease id. 1 when the lease was taken, 0 when limit leases are out.
// Lapsed leases are dropped first; the key outlives its longest lease.
var acquireLease = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`)

// pinIfAbsent: KEYS[1] = the pins hash; ARGV = pin key, hash, the most pins kept. The pin in force: the one there,
// or ARGV[2] when there was none and it was set; 0 when there was none and the hash holds the most pins already.
// The read, the count and the write are one script, so concurrent callers (on any replica) agree on one pin.
var pinIfAbsent = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then return cur end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ARGV[2]
`)

// setPin: KEYS[1] = the pins hash; ARGV = pin key, hash, the most pins kept. 1 when set, 0 when the key is new and
// the hash holds the most pins already.
var setPin = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// putConnect: KEYS = the record's key, the connects index (one hash tag); ARGV = connect id, record JSON, ttl (ms),
// the most records live, the call's nonce. 1 when stored, or when the id holds the record of this very call (one
// go-redis retried after a timeout, whose first run stored it); -1 when the id holds another live record; 0 when
// the most records are live already. Lapsed ids leave the index first (by Redis TIME, the clock of the records'
// PX), so that only live records count.
var putConnect = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'call') == ARGV[5] then return 1 end
  return -1
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'call', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`)

// takeConnect: KEYS = the record's key, the connects index; ARGV = connect id. The record, deleted, or false when
// there is none: the get and the delete are one step, so of callers racing on one id exactly one gets it.
var takeConnect = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'rec')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return v
`)

// addGrantUpstream: KEYS[1] = the registry of upstreams with grants; ARGV = upstream, the most upstreams. 1 when the
// upstream is there (already, or added), 0 when it is not and the set holds the most already.
var addGrantUpstream = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
`)

// deleteHash: KEYS[1] = a hash. How many fields it had; it is unlinked (freed in the background: an upstream's
// grants hash may hold MaxGrantsPerUpstream fields).
var deleteHash = redis.NewScript(`
local n = redis.call('HLEN', KEYS[1])
redis.call('UNLINK', KEYS[1])
return n
`)

// unlockToken: KEYS[1] = a lock; ARGV = its holder's token. Deletes the lock only if the token is the holder's, so
// that a holder whose lock lapsed and was taken by another does not release the other's. 1 when deleted.
var unlockToken = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// reserveTask: KEYS[1] = a principal's task index; ARGV = task id, the ms it has left (> 0), the most live tasks
// (0: no bound). {1, expiry} when the id was added, {2, expiry} when it was there already (a retry of this very
// call that go-redis made after a timeout, or an id taken: createTask tells which), {0, 0} when the principal holds
// the most live tasks already. expiry is in ms of Redis TIME, the clock of the record's PEXPIREAT. Lapsed ids
// leave first, so that only live tasks count; the index lives as long as its last task.
var reserveTask = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if cur then return {2, tonumber(cur)} end
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return {0, 0} end
local exp = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], exp, ARGV[1])
if redis.call('PTTL', KEYS[1]) < exp - now then redis.call('PEXPIREAT', KEYS[1], exp) end
return {1, exp}
`)

// createTask: KEYS[1] = the task's key; ARGV = record JSON, expiry (ms, Redis TIME), the call's nonce, the
// principal. 1 when stored, or when the key holds the record of this very call (a retry after a timeout, whose
// first run stored it); 0 when the id is taken. The expiry is kept in the hash too, for UpdateTask to set again.
var createTask = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'call') == ARGV[3] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'rec', ARGV[1], 'exp', ARGV[2], 'call', ARGV[3], 'principal', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`)

// listTasks: KEYS[1] = a principal's task index. Its live ids, lapsed ones removed first (by Redis TIME).
var listTasks = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`)

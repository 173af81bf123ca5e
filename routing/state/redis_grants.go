package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisGrants is Redis's GrantStore, keyed as below.
type redisGrants struct {
	c      redis.UniversalClient
	prefix string
}

var _ GrantStore = (*redisGrants)(nil)

// Keys of the grant tables; see grants.go and the package documentation.

func (r *redisGrants) connectKey(id string) string { return r.prefix + "{connects}:" + id }
func (r *redisGrants) connectsKey() string         { return r.prefix + "{connects}" }
func (r *redisGrants) grantsKey(upstream string) string {
	return r.prefix + "grants:{" + upstream + "}"
}
func (r *redisGrants) grantUpstreamsKey() string { return r.prefix + "{grant-upstreams}" }
func (r *redisGrants) lockKey(key string) string { return r.prefix + "lock:{" + key + "}" }
func (r *redisGrants) upstreamListKey(upstream string) string {
	return r.prefix + "upstreamlist:{" + upstream + "}"
}

// lockReleaseTimeout bounds an unlock's round trip; a lock whose unlock fails lapses at its ttl.
const lockReleaseTimeout = 2 * time.Second

// PutConnect implements GrantStore with one script (putConnect) over the record's key and the index of live ids,
// which share a hash tag: the existence check, the MaxConnects count and the write are one step. The record keeps
// a random nonce of the call, so that a retry of the call (go-redis retries a command that timed out, though its
// first run may have stored the record) succeeds rather than finding the id taken.
func (r *redisGrants) PutConnect(ctx context.Context, id string, rec ConnectRecord, ttl time.Duration) error {
	if err := checkConnect(id, rec, ttl); err != nil {
		return err
	}
	if rec.Created.IsZero() {
		rec.Created = time.Now()
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("state: connect %s: %w", id, err)
	}
	n, err := putConnect.Run(ctx, r.c, []string{r.connectKey(id), r.connectsKey()},
		id, data, max(ttl.Milliseconds(), 1), MaxConnects, randomToken()).Int()
	if err != nil {
		return unavailable("put connect", err)
	}
	switch n {
	case 1:
		return nil
	case -1:
		return fmt.Errorf("%w: connect %s", ErrExists, id)
	case 0:
		return errConnectsFull(id)
	}
	return unavailable("put connect", errBadReply)
}

// TakeConnect implements GrantStore with one script (takeConnect): an HGET and a DEL in one step, so a link is
// used once across every replica. A retry of a take that timed out finds nothing: the link fails, safely.
func (r *redisGrants) TakeConnect(ctx context.Context, id string) (ConnectRecord, error) {
	if err := checkID("connect id", id); err != nil {
		return ConnectRecord{}, err
	}
	data, err := takeConnect.Run(ctx, r.c, []string{r.connectKey(id), r.connectsKey()}, id).Text()
	if errors.Is(err, redis.Nil) {
		return ConnectRecord{}, fmt.Errorf("%w: connect %s", ErrNotFound, id)
	}
	if err != nil {
		return ConnectRecord{}, unavailable("take connect", err)
	}
	var rec ConnectRecord
	if err := json.Unmarshal([]byte(data), &rec); err != nil {
		return ConnectRecord{}, fmt.Errorf("state: connect %s: stored record: %w", id, err)
	}
	return rec, nil
}

// PutGrant implements GrantStore in three steps, as grants.go explains: reserve the upstream in the registry
// (addGrantUpstream, bounded by MaxUpstreams), write the grant (a bounded HSET: setPin, the same script as the
// pins', bounded by MaxGrantsPerUpstream), and add the upstream again, in case a DeleteUpstreamGrants removed it
// in between, so that the registry never lacks an upstream with a grant.
func (r *redisGrants) PutGrant(ctx context.Context, principal, upstream string, sealed []byte) error {
	if err := checkGrant(principal, upstream, sealed); err != nil {
		return err
	}
	reg := r.grantUpstreamsKey()
	ok, err := addGrantUpstream.Run(ctx, r.c, []string{reg}, upstream, MaxUpstreams).Int()
	if err != nil {
		return unavailable("put grant", err)
	}
	if ok == 0 {
		return errUpstreamsFull(upstream)
	}
	ok, err = setPin.Run(ctx, r.c, []string{r.grantsKey(upstream)}, principal, sealed, MaxGrantsPerUpstream).Int()
	if err != nil {
		return unavailable("put grant", err)
	}
	if ok == 0 {
		return errGrantsFull(principal, upstream)
	}
	if err := r.c.SAdd(ctx, reg, upstream).Err(); err != nil {
		return unavailable("put grant", err)
	}
	return nil
}

// GetGrant implements GrantStore (HGET).
func (r *redisGrants) GetGrant(ctx context.Context, principal, upstream string) ([]byte, error) {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return nil, err
	}
	b, err := r.c.HGet(ctx, r.grantsKey(upstream), principal).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: grant of %s for %s", ErrNotFound, principal, upstream)
	}
	if err != nil {
		return nil, unavailable("get grant", err)
	}
	return b, nil
}

// DeleteGrant implements GrantStore (HDEL). The upstream stays in the registry: removing it here could race with
// another principal's PutGrant and hide that grant from Grants.
func (r *redisGrants) DeleteGrant(ctx context.Context, principal, upstream string) error {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return err
	}
	if err := r.c.HDel(ctx, r.grantsKey(upstream), principal).Err(); err != nil {
		return unavailable("delete grant", err)
	}
	return nil
}

// DeleteUpstreamGrants implements GrantStore: the upstream leaves the registry, then its hash is unlinked
// (deleteHash), in that order (see grants.go). When it fails part way, calling it again finishes the job.
func (r *redisGrants) DeleteUpstreamGrants(ctx context.Context, upstream string) (int, error) {
	if err := checkID("upstream", upstream); err != nil {
		return 0, err
	}
	if err := r.c.SRem(ctx, r.grantUpstreamsKey(), upstream).Err(); err != nil {
		return 0, unavailable("delete upstream grants", err)
	}
	n, err := deleteHash.Run(ctx, r.c, []string{r.grantsKey(upstream)}).Int()
	if err != nil {
		return 0, unavailable("delete upstream grants", err)
	}
	return n, nil
}

// Grants implements GrantStore: the registry (SMEMBERS, at most MaxUpstreams names), then the principal's field of
// each upstream's hash (HGET, pipelined by vectorChunk). Made for a page a person loads, not for every call.
func (r *redisGrants) Grants(ctx context.Context, principal string) (map[string][]byte, error) {
	if err := checkID("principal", principal); err != nil {
		return nil, err
	}
	upstreams, err := r.c.SMembers(ctx, r.grantUpstreamsKey()).Result()
	if err != nil {
		return nil, unavailable("list grants", err)
	}
	out := map[string][]byte{}
	for start := 0; start < len(upstreams); start += vectorChunk {
		chunk := upstreams[start:min(start+vectorChunk, len(upstreams))]
		pipe := r.c.Pipeline()
		cmds := make([]*redis.StringCmd, len(chunk))
		for i, u := range chunk {
			cmds[i] = pipe.HGet(ctx, r.grantsKey(u), principal)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, unavailable("list grants", err)
		}
		for i, cmd := range cmds {
			b, err := cmd.Bytes()
			switch {
			case errors.Is(err, redis.Nil):
				continue // an upstream with no grant of principal's
			case err != nil:
				return nil, unavailable("list grants", err)
			}
			out[chunk[i]] = b
		}
	}
	return out, nil
}

// UpstreamGrants returns up to MaxListedGrants of upstream's grants, by principal (HSCAN, so a large hash is read
// in steps), for an admin revoking the upstream at its authorization server.
func (r *redisGrants) UpstreamGrants(ctx context.Context, upstream string) (map[string][]byte, error) {
	if err := checkID("upstream", upstream); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	var cursor uint64
	for {
		kv, next, err := r.c.HScan(ctx, r.grantsKey(upstream), cursor, "*", 500).Result()
		if err != nil {
			return nil, unavailable("list upstream grants", err)
		}
		for i := 0; i+1 < len(kv) && len(out) < MaxListedGrants; i += 2 {
			out[kv[i]] = []byte(kv[i+1])
		}
		if cursor = next; cursor == 0 || len(out) >= MaxListedGrants {
			return out, nil
		}
	}
}

// TryLock implements GrantStore with SET NX PX of a random token; unlock deletes the key only while it holds that
// token (unlockToken), so a holder that outlived its ttl cannot release the next holder's lock.
func (r *redisGrants) TryLock(ctx context.Context, key string, ttl time.Duration) (func(), bool, error) {
	if err := checkLock(key, ttl); err != nil {
		return nil, false, err
	}
	token := randomToken()
	k := r.lockKey(key)
	ok, err := r.c.SetNX(ctx, k, token, ttl).Result()
	if err != nil {
		return nil, false, unavailable("lock", err)
	}
	if !ok {
		return nil, false, nil
	}
	var once sync.Once
	unlock := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
			defer cancel()
			_ = unlockToken.Run(ctx, r.c, []string{k}, token).Err()
		})
	}
	return unlock, true, nil
}

// PutUpstreamList implements GrantStore (SET PX).
func (r *redisGrants) PutUpstreamList(ctx context.Context, upstream string, list []byte, ttl time.Duration) error {
	if err := checkUpstreamList(upstream, list, ttl); err != nil {
		return err
	}
	if err := r.c.Set(ctx, r.upstreamListKey(upstream), list, ttl).Err(); err != nil {
		return unavailable("put upstream list", err)
	}
	return nil
}

// GetUpstreamList implements GrantStore (GET).
func (r *redisGrants) GetUpstreamList(ctx context.Context, upstream string) ([]byte, error) {
	if err := checkID("upstream", upstream); err != nil {
		return nil, err
	}
	b, err := r.c.Get(ctx, r.upstreamListKey(upstream)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: tool list of %s", ErrNotFound, upstream)
	}
	if err != nil {
		return nil, unavailable("get upstream list", err)
	}
	return b, nil
}

// randomToken is 128 random bits in hex: a lock holder's token, a PutConnect call's nonce.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand's Read never fails
	return hex.EncodeToString(b[:])
}

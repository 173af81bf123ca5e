package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisSessions is Redis's SessionStore: a hash per session that expires ttl after its last write.
type redisSessions struct {
	c      redis.UniversalClient
	prefix string
	ttl    time.Duration
}

var _ SessionStore = (*redisSessions)(nil)

// sessionKey carries the session's id as a hash tag, so that its event logs' keys share its Cluster slot.
func (r *redisSessions) sessionKey(id string) string { return r.prefix + "session:{" + id + "}" }

// maxUpdateAttempts bounds Update's optimistic retries under contention.
const maxUpdateAttempts = 1000

// Create implements SessionStore.
func (r *redisSessions) Create(ctx context.Context, rec SessionRecord) error {
	if err := checkID("session id", rec.ID); err != nil {
		return err
	}
	now := time.Now()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	rec.Touched = now
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("state: session %s: %w", rec.ID, err)
	}
	n, err := createSession.Run(ctx, r.c, []string{r.sessionKey(rec.ID)},
		data, now.UnixMilli(), r.ttl.Milliseconds()).Int()
	if err != nil {
		return unavailable("create session", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: session %s", ErrExists, rec.ID)
	}
	return nil
}

// decodeSession reads a session hash (HGETALL); ok is false when it is empty (no such key).
func decodeSession(id string, h map[string]string) (rec SessionRecord, ok bool, err error) {
	data, found := h["rec"]
	if !found {
		return rec, false, nil
	}
	if err := json.Unmarshal([]byte(data), &rec); err != nil {
		return rec, true, fmt.Errorf("state: session %s: stored record: %w", id, err)
	}
	if ms, err := strconv.ParseInt(h["touched"], 10, 64); err == nil {
		rec.Touched = time.UnixMilli(ms)
	}
	rec.ID = id
	return rec, true, nil
}

// Get implements SessionStore.
func (r *redisSessions) Get(ctx context.Context, id string) (SessionRecord, error) {
	if err := checkID("session id", id); err != nil {
		return SessionRecord{}, err
	}
	h, err := r.c.HGetAll(ctx, r.sessionKey(id)).Result()
	if err != nil {
		return SessionRecord{}, unavailable("get session", err)
	}
	rec, ok, err := decodeSession(id, h)
	if err != nil {
		return SessionRecord{}, err
	}
	if !ok {
		return SessionRecord{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return rec, nil
}

// fnError carries Update's callback error out of the transaction untouched.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// watchUpdate runs the read-modify-write txf under WATCH of key, on c, again from the read when another writer got in
// between: up to maxUpdateAttempts, backing off a little more as conflicts repeat, within ctx. An error txf's fn
// returned (fnError) is returned as is; what and id name the record in errors.
func watchUpdate(ctx context.Context, c redis.UniversalClient, what, id, key string, txf func(*redis.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := c.Watch(ctx, txf, key)
		var fe fnError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &fe):
			return fe.err
		case !errors.Is(err, redis.TxFailedErr):
			return unavailable("update "+what, err)
		case attempt == maxUpdateAttempts:
			return fmt.Errorf("state: update %s %s: gave up after %d conflicting writes", what, id, attempt)
		}
		d := time.Duration(rand.Int64N(int64(min(attempt, 20)) * int64(100*time.Microsecond)))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return unavailable("update "+what, ctx.Err())
		}
	}
}

// Update implements SessionStore: WATCH the key, read it, run fn, and write it back in MULTI/EXEC, again from
// the read when another writer got in between.
func (r *redisSessions) Update(ctx context.Context, id string, fn func(*SessionRecord) error) error {
	if err := checkID("session id", id); err != nil {
		return err
	}
	key := r.sessionKey(id)
	txf := func(tx *redis.Tx) error {
		h, err := tx.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		rec, ok, err := decodeSession(id, h)
		if err != nil {
			return fnError{err}
		}
		if !ok {
			return fnError{fmt.Errorf("%w: session %s", ErrNotFound, id)}
		}
		if err := fn(&rec); err != nil {
			return fnError{err}
		}
		now := time.Now()
		rec.ID, rec.Touched = id, now
		data, err := json.Marshal(rec)
		if err != nil {
			return fnError{fmt.Errorf("state: session %s: %w", id, err)}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "rec", data, "touched", now.UnixMilli())
			p.PExpire(ctx, key, r.ttl)
			return nil
		})
		return err
	}
	return watchUpdate(ctx, r.c, "session", id, key, txf)
}

// Touch implements SessionStore.
func (r *redisSessions) Touch(ctx context.Context, id string) error {
	if err := checkID("session id", id); err != nil {
		return err
	}
	n, err := touchSession.Run(ctx, r.c, []string{r.sessionKey(id)},
		r.ttl.Milliseconds(), time.Now().UnixMilli()).Int()
	if err != nil {
		return unavailable("touch session", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return nil
}

// Delete implements SessionStore.
func (r *redisSessions) Delete(ctx context.Context, id string) error {
	if err := checkID("session id", id); err != nil {
		return err
	}
	if err := r.c.Del(ctx, r.sessionKey(id)).Err(); err != nil {
		return unavailable("delete session", err)
	}
	return nil
}

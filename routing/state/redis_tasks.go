package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Keys of the task store:
//
//	<prefix>task:{<task id>}            hash: "rec" (the TaskRecord as JSON), "principal" (its Principal as is:
//	                                     JSON would replace bytes that are not UTF-8), "exp" (its expiry, ms of
//	                                     Redis TIME), "call" (the nonce of the CreateTask that stored it);
//	                                     PEXPIREAT = exp, set by CreateTask and set again, unchanged, by UpdateTask
//	<prefix>tasks:{<hash of principal>} sorted set: task id → expiry (ms, Redis TIME), counting a principal's live
//	                                     tasks against CreateTask's limit and listing them; PEXPIREAT = its last
//	                                     task's expiry
//
// A task's key and its principal's index have hash tags of their own, so in Cluster they are in different slots
// and no one script can write both. CreateTask therefore takes two steps: it reserves the id in the index
// (reserveTask: the count against the limit and the add are one step, so concurrent creates on any replicas never
// exceed the limit), then creates the record (createTask). Until the second step the id counts without a record
// behind it, which ListTasks skips; when the id turns out taken the reservation is removed again; when Redis fails
// in between (or a reservation retried by go-redis cannot tell it was its own) it stays, and counts against the
// limit until the task's expiry would have come. The index is hashed
// so that its key's length and characters never depend on the principal (any bytes, "" without auth).
//
// The expiry is computed once, by CreateTask, in Redis's clock: the time the record has left by the creating
// replica's clock (Created+TTL less its now) added to Redis TIME. UpdateTask sets it again with PEXPIREAT rather
// than keeping the TTL (KEEPTTL, or an HSET, which keeps it): a record that expired between UpdateTask's read and
// its write, which WATCH does not catch before Redis 7, would otherwise come back with no expiry at all.

// redisTasks is Redis's TaskStore, keyed as above.
type redisTasks struct {
	c      redis.UniversalClient
	prefix string
}

var _ TaskStore = (*redisTasks)(nil)

func (r *redisTasks) taskKey(id string) string { return r.prefix + "task:{" + id + "}" }

func (r *redisTasks) tasksKey(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return r.prefix + "tasks:{" + hex.EncodeToString(sum[:16]) + "}"
}

// taskChunk is how many records one pipeline of ListTasks reads: each may be MaxTaskSize bytes.
const taskChunk = 16

// CreateTask implements TaskStore in the two steps above. The record keeps a random nonce of the call, so that a
// retry of the call (go-redis retries a command that timed out, though its first run may have stored the record)
// succeeds rather than finding the id taken.
func (r *redisTasks) CreateTask(ctx context.Context, rec TaskRecord, limit int) error {
	now := time.Now()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	left, err := checkTask(rec, now)
	if err != nil {
		return err
	}
	data, err := encodeTask(rec)
	if err != nil {
		return err
	}
	index := r.tasksKey(rec.Principal)
	leftMs := (left + time.Millisecond - 1).Milliseconds() // at least 1: checkTask saw some left
	res, err := reserveTask.Run(ctx, r.c, []string{index}, rec.ID, leftMs, max(limit, 0)).Int64Slice()
	if err != nil {
		return unavailable("create task", err)
	}
	if len(res) != 2 {
		return unavailable("create task", errBadReply)
	}
	added, exp := res[0], res[1]
	if added == 0 {
		return errTasksFull(rec, limit)
	}
	n, err := createTask.Run(ctx, r.c, []string{r.taskKey(rec.ID)}, data, exp, randomToken(), rec.Principal).Int()
	if err != nil {
		return unavailable("create task", err) // the reservation stays: the record may have been stored
	}
	if n == 0 {
		if added == 1 { // ours, for a record that is another's: take it back, or it counts until exp
			_ = r.c.ZRem(ctx, index, rec.ID).Err()
		}
		return fmt.Errorf("%w: task %s", ErrExists, rec.ID)
	}
	return nil
}

// decodeTask reads a stored record from its hash's "rec" and "principal" (HMGET); ok is false when there is none.
// The id and principal are taken as they are, not from the JSON, which holds only UTF-8.
func decodeTask(id string, rec, principal any) (_ TaskRecord, ok bool, err error) {
	data, ok := rec.(string)
	if !ok {
		return TaskRecord{}, false, nil
	}
	var out TaskRecord
	if err := json.Unmarshal([]byte(data), &out); err != nil {
		return TaskRecord{}, true, fmt.Errorf("state: task %s: stored record: %w", id, err)
	}
	out.ID = id
	if p, ok := principal.(string); ok {
		out.Principal = p
	}
	return out, true, nil
}

// GetTask implements TaskStore (HMGET).
func (r *redisTasks) GetTask(ctx context.Context, id string) (TaskRecord, error) {
	if err := checkTaskID(id); err != nil {
		return TaskRecord{}, err
	}
	v, err := r.c.HMGet(ctx, r.taskKey(id), "rec", "principal").Result()
	if err != nil {
		return TaskRecord{}, unavailable("get task", err)
	}
	rec, ok, err := decodeTask(id, v[0], v[1])
	if err != nil {
		return TaskRecord{}, err
	}
	if !ok {
		return TaskRecord{}, fmt.Errorf("%w: task %s", ErrNotFound, id)
	}
	return rec, nil
}

// UpdateTask implements TaskStore as Update does sessions: WATCH the key, read it, run fn, and write it back in
// MULTI/EXEC with its expiry as CreateTask set it, again from the read when another writer got in between.
func (r *redisTasks) UpdateTask(ctx context.Context, id string, fn func(*TaskRecord) error) error {
	if err := checkTaskID(id); err != nil {
		return err
	}
	key := r.taskKey(id)
	txf := func(tx *redis.Tx) error {
		v, err := tx.HMGet(ctx, key, "rec", "principal", "exp").Result()
		if err != nil {
			return err
		}
		cur, ok, err := decodeTask(id, v[0], v[1])
		if err != nil {
			return fnError{err}
		}
		if !ok {
			return fnError{fmt.Errorf("%w: task %s", ErrNotFound, id)}
		}
		expStr, _ := v[2].(string)
		exp, err := strconv.ParseInt(expStr, 10, 64)
		if err != nil {
			return fnError{fmt.Errorf("state: task %s: stored expiry %q: %w", id, expStr, err)}
		}
		rec := cur // decoded afresh each attempt: already fn's own copy
		if err := fn(&rec); err != nil {
			return fnError{err}
		}
		rec.ID, rec.Principal, rec.Endpoint, rec.Created, rec.TTL = cur.ID, cur.Principal, cur.Endpoint, cur.Created, cur.TTL
		out, err := encodeTask(rec)
		if err != nil {
			return fnError{err}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "rec", out)
			p.PExpireAt(ctx, key, time.UnixMilli(exp))
			return nil
		})
		return err
	}
	return watchUpdate(ctx, r.c, "task", id, key, txf)
}

// ListTasks implements TaskStore: the principal's index (listTasks, pruned first), then each record (HMGET,
// pipelined by taskChunk). Ids without a record (a create in progress, or one that failed half way) are skipped,
// as are records of another principal (an id another principal's create found taken, before it was taken back).
func (r *redisTasks) ListTasks(ctx context.Context, principal string) ([]TaskRecord, error) {
	ids, err := listTasks.Run(ctx, r.c, []string{r.tasksKey(principal)}).StringSlice()
	if err != nil {
		return nil, unavailable("list tasks", err)
	}
	var out []TaskRecord
	for start := 0; start < len(ids); start += taskChunk {
		chunk := ids[start:min(start+taskChunk, len(ids))]
		pipe := r.c.Pipeline()
		cmds := make([]*redis.SliceCmd, len(chunk))
		for i, id := range chunk {
			cmds[i] = pipe.HMGet(ctx, r.taskKey(id), "rec", "principal")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, unavailable("list tasks", err)
		}
		for i, cmd := range cmds {
			v := cmd.Val()
			rec, ok, err := decodeTask(chunk[i], v[0], v[1])
			if err != nil {
				return nil, err
			}
			if ok && rec.Principal == principal {
				out = append(out, rec)
			}
		}
	}
	sortTasks(out)
	return out, nil
}

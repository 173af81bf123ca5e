package state

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Task statuses (the tasks extension, SEP-2663, and 2025-11-25's tasks share them).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskTerminal reports whether status is one a task never leaves.
func TaskTerminal(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// Limits of the task store.
const (
	// MaxTaskSize bounds one record, encoded (its result mostly): past it CreateTask and UpdateTask refuse with
	// ErrInvalid, and the gateway fails the task with a clear error instead.
	MaxTaskSize = 16 << 20
	// MaxTaskTTL bounds how long a task is kept.
	MaxTaskTTL = 7 * 24 * time.Hour
)

// TaskRecord is a task the gateway runs and holds for a client (issue 19, item 3): a tools/call whose upstream
// does not take tasks runs on the replica that accepted it (Owner), while its status and result live here, so
// any replica answers tasks/get and the call outlives the client's connection.
type TaskRecord struct {
	// ID is the task id clients see: 256 random bits, so it is also unguessable.
	ID string `json:"id"`
	// Principal is the caller the task is bound to ("" without auth): nobody else may see or touch it.
	Principal string `json:"principal,omitempty"`
	// Endpoint is the endpoint the task was made through ("" for the whole catalog): the task is bound to it as
	// well, and so to the resource the caller's token was accepted for there (each endpoint is a resource of its
	// own). A record written before the field existed has none, so it is the whole catalog's.
	Endpoint string `json:"endpoint,omitempty"`
	// Upstream and Tool name what runs: the upstream's configured name and the client-visible tool name.
	Upstream string `json:"upstream,omitempty"`
	Tool     string `json:"tool,omitempty"`
	// Owner is the replica that runs the call: tasks/update and tasks/cancel reach it over the bus.
	Owner string `json:"owner,omitempty"`
	// UpstreamTask, when set, is the upstream's own task id: the upstream runs the task (it offers the tasks
	// extension) and the gateway only routes to it, binding the task to Principal. Owner is then unused.
	UpstreamTask string `json:"upstreamTask,omitempty"`
	// Session is the client session that created the task: without auth every caller is Principal "", so a
	// 2025-11-25 tasks/list shows a session only the tasks it created.
	Session string `json:"session,omitempty"`
	// Era is the protocol era of the client that created it ("modern" or "legacy"): it chooses the wire shape.
	Era string `json:"era,omitempty"`

	Status        string    `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	// TTL counts from Created: the store forgets the task then (0 < TTL <= MaxTaskTTL).
	TTL time.Duration `json:"ttl"`
	// PollInterval is the polling interval suggested to the client.
	PollInterval time.Duration `json:"pollInterval,omitempty"`

	// Result is the call's result (completed), Error its JSON-RPC error object (failed).
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// InputRequests are the requests the call waits on (input_required), an object keyed by request key.
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	// InputResponses are the client's answers to InputRequests not yet taken by the owner, keyed the same.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	// CancelRequested is set by tasks/cancel; the owner stops the call and records cancelled.
	CancelRequested bool `json:"cancelRequested,omitempty"`
}

// TaskStore keeps gateway-made tasks, shared by every replica. Ids are opaque to the store, non-empty and at
// most 256 bytes (ErrInvalid otherwise).
type TaskStore interface {
	// CreateTask stores rec until rec.Created+rec.TTL (Created is set to now when zero). ErrExists if rec.ID is
	// taken; ErrFull when limit > 0 and rec.Principal already holds limit live tasks; ErrInvalid when the
	// record has no ID or Status, its TTL is out of range, it would expire at once (a Created so far back that
	// Created+TTL is not after now), or it does not encode (a RawMessage that is not JSON) or encodes to more
	// than MaxTaskSize. When it returns nil, GetTask finds the task on every replica (the extension requires a
	// durable create).
	CreateTask(ctx context.Context, rec TaskRecord, limit int) error
	// GetTask returns the task; ErrNotFound if there is none (or it expired).
	GetTask(ctx context.Context, id string) (TaskRecord, error)
	// UpdateTask is an atomic read-modify-write: fn gets a copy of the current record and changes it in place;
	// the result is stored unless fn returns an error, which UpdateTask returns as is. fn may run more than once
	// (optimistic concurrency) and must not call the store. ID, Principal, Endpoint, Created and TTL cannot change, and
	// the expiry stays where CreateTask put it. ErrNotFound if there is none; ErrInvalid past MaxTaskSize (or
	// when fn leaves a RawMessage that is not JSON), and then nothing is stored.
	UpdateTask(ctx context.Context, id string, fn func(*TaskRecord) error) error
	// ListTasks returns principal's live tasks, newest first.
	ListTasks(ctx context.Context, principal string) ([]TaskRecord, error)
}

// Both implementations keep tasks.
var (
	_ TaskStore = (*Memory)(nil)
	_ TaskStore = (*Redis)(nil)
)

// maxTaskIDLen bounds a task id: the ids the gateway makes are far shorter, and clients send them back.
const maxTaskIDLen = 256

// Clone returns a deep copy of r: nothing in it is shared with r.
func (r TaskRecord) Clone() TaskRecord {
	r.Result = slices.Clone(r.Result)
	r.Error = slices.Clone(r.Error)
	r.InputRequests = slices.Clone(r.InputRequests)
	r.InputResponses = slices.Clone(r.InputResponses)
	return r
}

func checkTaskID(id string) error {
	if id == "" || len(id) > maxTaskIDLen {
		return fmt.Errorf("%w: task id of length %d (1 to %d)", ErrInvalid, len(id), maxTaskIDLen)
	}
	return nil
}

// checkTask validates CreateTask's record, once Created is set, and returns how long it has left at now.
func checkTask(rec TaskRecord, now time.Time) (time.Duration, error) {
	if err := checkTaskID(rec.ID); err != nil {
		return 0, err
	}
	if rec.Status == "" {
		return 0, fmt.Errorf("%w: task %s: no status", ErrInvalid, rec.ID)
	}
	if rec.TTL <= 0 || rec.TTL > MaxTaskTTL {
		return 0, fmt.Errorf("%w: task %s: ttl %v (0 to %v)", ErrInvalid, rec.ID, rec.TTL, MaxTaskTTL)
	}
	left := rec.Created.Add(rec.TTL).Sub(now)
	if left <= 0 {
		return 0, fmt.Errorf("%w: task %s: created %v with ttl %v, so expired already", ErrInvalid, rec.ID,
			rec.Created, rec.TTL)
	}
	return left, nil
}

// encodeTask is rec as Redis stores it, and as both stores measure it against MaxTaskSize: JSON, with HTML
// characters left as they are, so that a result reads back as the upstream sent it (compacted, in Redis).
func encodeTask(rec TaskRecord) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, fmt.Errorf("%w: task %s: %w", ErrInvalid, rec.ID, err)
	}
	data := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(data) > MaxTaskSize {
		return nil, fmt.Errorf("%w: task %s encodes to %d bytes, at most %d", ErrInvalid, rec.ID, len(data), MaxTaskSize)
	}
	return data, nil
}

// sortTasks orders tasks newest first (by Created; by ID among equals, so that the order is stable).
func sortTasks(recs []TaskRecord) {
	slices.SortFunc(recs, func(a, b TaskRecord) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

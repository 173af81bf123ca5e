package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// runTaskSuite is the conformance suite of TaskStore, on the harnesses of runSuite (suite_test.go).
func runTaskSuite(t *testing.T, newStore factory, inBubble bool) {
	tests := []storeTest{
		{"TaskRoundTrip", testTaskRoundTrip},
		{"TaskExists", testTaskExists},
		{"TaskInvalid", testTaskInvalid},
		{"TaskLimit", testTaskLimit},
		{"TaskConcurrentCreate", testTaskConcurrentCreate},
		{"TaskTTL", testTaskTTL},
		{"TaskUpdate", testTaskUpdate},
		{"TaskConcurrentUpdate", testTaskConcurrentUpdate},
		{"TaskList", testTaskList},
		{"TaskShared", testTaskShared},
		{"TaskCancelled", testTaskCancelled},
	}
	runStoreTests(t, tests, newStore, inBubble)
}

func TestTasksMemory(t *testing.T) {
	t.Parallel()
	runTaskSuite(t, newMemoryHarness, true)
}

func TestTasksMiniredis(t *testing.T) {
	t.Parallel()
	runTaskSuite(t, newMiniredisHarness, false)
}

// TestTasksRedisServer runs the suite against a real redis-server, as TestGrantsRedisServer does: each test under
// its own prefix, with short TTLs and real time.
func TestTasksRedisServer(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	runTaskSuite(t, func(t *testing.T, opts ...Option) *harness { return redisServerTaskHarness(t, srv, opts...) }, false)
}

// redisServerTaskHarness is a store on srv under a prefix of its own, with short TTLs and real time.
func redisServerTaskHarness(t *testing.T, srv *redisServer, opts ...Option) *harness {
	const ttl = time.Second
	prefix := fmt.Sprintf("sbtasks%d:", prefixSeq.Add(1))
	newRedis := func(t *testing.T, opts ...Option) *Redis {
		opts = append([]Option{WithSessionTTL(ttl), WithEventLog(0, ttl)}, opts...)
		r := NewRedis(newClient(t, srv.addr()), prefix, opts...)
		t.Cleanup(r.Shutdown)
		return r
	}
	return &harness{
		Store:   newRedis(t, opts...),
		ttl:     ttl,
		advance: wallSleep,
		second:  func(t *testing.T, opts ...Option) Store { return newRedis(t, opts...) },
		shared:  true,
	}
}

// sampleTask is a task with every field set, created a tenth of ttl ago.
func sampleTask(id, principal string, ttl time.Duration) TaskRecord {
	now := time.Now()
	return TaskRecord{
		ID:              id,
		Principal:       principal,
		Endpoint:        "team",
		Upstream:        "search",
		Tool:            "search__find",
		Owner:           "http://10.0.0.1:8080/mcp",
		UpstreamTask:    "up-task-7",
		Era:             "modern",
		Status:          TaskInputRequired,
		StatusMessage:   "waiting for <you> & them",
		Created:         now.Add(-ttl / 10),
		Updated:         now,
		TTL:             ttl,
		PollInterval:    1500 * time.Millisecond,
		Result:          json.RawMessage(`{"content":[{"type":"text","text":"<b>a & b</b>"}],"isError":false}`),
		Error:           json.RawMessage(`{"code":-32603,"message":"upstream failed"}`),
		InputRequests:   json.RawMessage(`{"r1":{"method":"elicitation/create","params":{"message":"ok?"}}}`),
		InputResponses:  json.RawMessage(`{"r1":{"action":"accept"}}`),
		CancelRequested: true,
	}
}

// minimalTask is a task with only what CreateTask needs.
func minimalTask(id, principal string, ttl time.Duration) TaskRecord {
	return TaskRecord{ID: id, Principal: principal, Status: TaskWorking, TTL: ttl}
}

// sameTask compares records, their times by instant (a record read from Redis has lost its monotonic reading and
// its location).
func sameTask(t *testing.T, got, want TaskRecord, what string) {
	t.Helper()
	if !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) {
		t.Errorf("%s: created %v, updated %v; want %v, %v", what, got.Created, got.Updated, want.Created, want.Updated)
	}
	got.Created, got.Updated, want.Created, want.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: record\n got %.2000s\nwant %.2000s", what, fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want))
	}
}

// taskIDs lists the ids of recs, in order.
func taskIDs(recs []TaskRecord) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// sameList checks that ListTasks(principal) returns exactly the tasks want, in that order.
func sameList(t *testing.T, s TaskStore, principal string, want []string, what string) {
	t.Helper()
	got, err := s.ListTasks(ctxT(t), principal)
	if err != nil {
		t.Fatalf("%s: ListTasks(%q): %v", what, principal, err)
	}
	if ids := taskIDs(got); !slices.Equal(ids, want) {
		t.Errorf("%s: ListTasks(%q) = %q, want %q", what, principal, ids, want)
	}
}

// testTaskRoundTrip: every field of a task comes back as it was created, Created is set when zero, and what the
// store returns, and what it was given, are the caller's to change.
func testTaskRoundTrip(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	full := sampleTask("t-full", "alice", h.ttl)
	given := full.Clone()
	if err := h.CreateTask(ctx, given, 0); err != nil {
		t.Fatal(err)
	}
	given.Result[2] = 'X' // the store kept its own copy
	given.InputRequests[2] = 'X'
	got, err := h.GetTask(ctx, "t-full")
	if err != nil {
		t.Fatal(err)
	}
	sameTask(t, got, full, "GetTask")
	got.Result[2] = 'X'
	got.Error[2] = 'X'
	again, _ := h.GetTask(ctx, "t-full")
	sameTask(t, again, full, "GetTask after changing what was read")

	// Created is set to now when zero; nothing else is filled in.
	before := time.Now()
	if err := h.CreateTask(ctx, minimalTask("t-min", "", h.ttl), 0); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	got, err = h.GetTask(ctx, "t-min")
	if err != nil {
		t.Fatal(err)
	}
	if got.Created.Before(before) || got.Created.After(after) {
		t.Errorf("Created %v, want between %v and %v", got.Created, before, after)
	}
	want := minimalTask("t-min", "", h.ttl)
	want.Created = got.Created
	sameTask(t, got, want, "a minimal task")

	// At the id's bound, and with ids Redis keys could trip on.
	for _, id := range []string{strings.Repeat("i", maxTaskIDLen), "{x}", "a}b{", "task:{t-full}", "\x00\xff 上"} {
		rec := sampleTask(id, "bob\xff", h.ttl) // a principal JSON would mangle
		if err := h.CreateTask(ctx, rec, 0); err != nil {
			t.Fatalf("CreateTask(%.20q): %v", id, err)
		}
		got, err := h.GetTask(ctx, id)
		if err != nil {
			t.Fatalf("GetTask(%.20q): %v", id, err)
		}
		sameTask(t, got, rec, fmt.Sprintf("task %.20q", id))
	}

	if _, err := h.GetTask(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of a missing id: %v, want ErrNotFound", err)
	}
	called := false
	err = h.UpdateTask(ctx, "nope", func(*TaskRecord) error { called = true; return nil })
	if !errors.Is(err, ErrNotFound) || called {
		t.Errorf("UpdateTask of a missing id: %v (fn called: %v), want ErrNotFound", err, called)
	}
}

// testTaskExists: an id is taken once, by any principal, and a refused create changes nothing: not the task there,
// nor what the refused principal counts against its limit.
func testTaskExists(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	first := sampleTask("t1", "alice", h.ttl)
	if err := h.CreateTask(ctx, first, 0); err != nil {
		t.Fatal(err)
	}
	var other TaskStore = h
	if h.shared {
		other = h.second(t)
	}
	for _, tc := range []struct {
		name  string
		s     TaskStore
		rec   TaskRecord
		limit int
	}{
		{"same principal", h, minimalTask("t1", "alice", h.ttl), 0},
		{"another principal", h, minimalTask("t1", "bob", h.ttl), 1},
		{"on another store", other, minimalTask("t1", "bob", h.ttl), 1},
		{"without principal", h, minimalTask("t1", "", h.ttl), 0},
	} {
		if err := tc.s.CreateTask(ctx, tc.rec, tc.limit); !errors.Is(err, ErrExists) {
			t.Errorf("CreateTask of a taken id, %s: %v, want ErrExists", tc.name, err)
		}
	}
	got, err := h.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	sameTask(t, got, first, "the task after refused creates")
	// bob's refused creates took nothing of his limit of 1.
	if err := h.CreateTask(ctx, minimalTask("b1", "bob", h.ttl), 1); err != nil {
		t.Errorf("bob's first task after his refused creates: %v", err)
	}
	sameList(t, h, "bob", []string{"b1"}, "after the refused creates")
	sameList(t, h, "", nil, "after the refused creates")
	sameList(t, h, "alice", []string{"t1"}, "after the refused creates")
}

// testTaskInvalid: malformed records and ids are refused with ErrInvalid, and nothing is stored.
func testTaskInvalid(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	with := func(f func(*TaskRecord)) TaskRecord {
		r := sampleTask("bad", "alice", h.ttl)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		rec  TaskRecord
	}{
		{"no id", with(func(r *TaskRecord) { r.ID = "" })},
		{"an id of 257 bytes", with(func(r *TaskRecord) { r.ID = strings.Repeat("i", maxTaskIDLen+1) })},
		{"no status", with(func(r *TaskRecord) { r.Status = "" })},
		{"no ttl", with(func(r *TaskRecord) { r.TTL = 0 })},
		{"a negative ttl", with(func(r *TaskRecord) { r.TTL = -time.Second })},
		{"a ttl past MaxTaskTTL", with(func(r *TaskRecord) { r.TTL = MaxTaskTTL + time.Millisecond })},
		{"created a ttl ago", with(func(r *TaskRecord) { r.Created = time.Now().Add(-r.TTL) })},
		{"created long ago", with(func(r *TaskRecord) { r.Created = time.Now().Add(-MaxTaskTTL * 2) })},
		{"a result that is not JSON", with(func(r *TaskRecord) { r.Result = json.RawMessage(`{"a":`) })},
		{"input requests that are not JSON", with(func(r *TaskRecord) { r.InputRequests = json.RawMessage("x") })},
	} {
		if err := h.CreateTask(ctx, tc.rec, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateTask of %s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := h.GetTask(ctx, "bad"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask after refused creates: %v, want ErrNotFound", err)
	}
	sameList(t, h, "alice", nil, "after refused creates")

	long := strings.Repeat("i", maxTaskIDLen+1)
	for _, id := range []string{"", long} {
		if _, err := h.GetTask(ctx, id); !errors.Is(err, ErrInvalid) {
			t.Errorf("GetTask of an id of %d bytes: %v, want ErrInvalid", len(id), err)
		}
		if err := h.UpdateTask(ctx, id, func(*TaskRecord) error { return nil }); !errors.Is(err, ErrInvalid) {
			t.Errorf("UpdateTask of an id of %d bytes: %v, want ErrInvalid", len(id), err)
		}
	}

	// Updates that would make the record invalid are refused, and leave it as it was.
	rec := sampleTask("t1", "alice", h.ttl)
	if err := h.CreateTask(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fn   func(*TaskRecord) error
	}{
		{"a result that is not JSON", func(r *TaskRecord) error {
			r.Status = TaskCompleted
			r.Result = json.RawMessage(`{"content":[`)
			return nil
		}},
	} {
		if err := h.UpdateTask(ctx, "t1", tc.fn); !errors.Is(err, ErrInvalid) {
			t.Errorf("UpdateTask to %s: %v, want ErrInvalid", tc.name, err)
		}
		got, err := h.GetTask(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		sameTask(t, got, rec, "after the refused update to "+tc.name)
	}
}

// bigTask returns rec with a Result that makes it encode to exactly size bytes: as JSON, HTML characters left as
// they are (what MaxTaskSize bounds).
func bigTask(t *testing.T, rec TaskRecord, size int) TaskRecord {
	t.Helper()
	rec.Result = json.RawMessage(`""`)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		t.Fatal(err)
	}
	rec.Result = json.RawMessage(`"` + strings.Repeat("r", size-(b.Len()-1)) + `"`) // less Encode's newline
	return rec
}

// TestTaskSizeBound: a record of MaxTaskSize bytes is stored, and read back whole; one byte more is refused with
// ErrInvalid, created or updated, and nothing is stored. Against each store, one after the other, and before the
// parallel tests: under -race, encoding such a record takes about half a second of CPU, which run alongside the
// suites would hold up their real-time tests (TTLs, Tail's timing, client timeouts).
func TestTaskSizeBound(t *testing.T) {
	for _, s := range []struct {
		name     string
		newStore factory
	}{
		{"Memory", newMemoryHarness},
		{"Miniredis", newMiniredisHarness},
		{"RedisServer", func(t *testing.T, opts ...Option) *harness {
			return redisServerTaskHarness(t, startRedisServer(t), opts...)
		}},
	} {
		t.Run(s.name, func(t *testing.T) { testTaskSizeBound(t, s.newStore) })
	}
}

func testTaskSizeBound(t *testing.T, newStore factory) {
	h := newStore(t)
	// Longer than ctxT's: records of MaxTaskSize bytes through miniredis under the race detector, on a busy
	// machine, took more than its 20 s.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const ttl = time.Hour // real time passes while big records are encoded
	big := bigTask(t, sampleTask("big", "alice", ttl), MaxTaskSize)
	if err := h.CreateTask(ctx, big, 0); err != nil {
		t.Fatalf("CreateTask of MaxTaskSize bytes: %v", err)
	}
	got, err := h.GetTask(ctx, "big")
	if err != nil {
		t.Fatalf("GetTask of MaxTaskSize bytes: %v", err)
	}
	if !bytes.Equal(got.Result, big.Result) {
		t.Errorf("GetTask of MaxTaskSize bytes: a result of %d bytes, want the %d stored", len(got.Result), len(big.Result))
	}
	got.Result, big.Result = nil, nil
	sameTask(t, got, big, "the rest of the record of MaxTaskSize bytes")

	bigger := bigTask(t, sampleTask("bigger", "alice", ttl), MaxTaskSize+1)
	if err := h.CreateTask(ctx, bigger, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("CreateTask of MaxTaskSize+1 bytes: %v, want ErrInvalid", err)
	}
	if _, err := h.GetTask(ctx, "bigger"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of the task refused: %v, want ErrNotFound", err)
	}
	small := sampleTask("small", "alice", ttl)
	if err := h.CreateTask(ctx, small, 0); err != nil {
		t.Fatal(err)
	}
	err = h.UpdateTask(ctx, "small", func(r *TaskRecord) error {
		r.Status = TaskCompleted
		*r = bigTask(t, *r, MaxTaskSize+1)
		return nil
	})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("UpdateTask to MaxTaskSize+1 bytes: %v, want ErrInvalid", err)
	}
	if got, err := h.GetTask(ctx, "small"); err != nil {
		t.Error(err)
	} else {
		sameTask(t, got, small, "after the refused update")
	}
}

// testTaskLimit: a principal holds at most limit live tasks when limit > 0 (other principals not counted), and
// any number with limit 0 or less; each call brings its own limit.
func testTaskLimit(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	var other TaskStore = h
	if h.shared {
		other = h.second(t)
	}
	steps := []struct {
		s         TaskStore
		id, who   string
		limit     int
		wantFull  bool
		heldAfter int // alice's tasks
	}{
		{h, "a0", "alice", 3, false, 1},
		{h, "a1", "alice", 3, false, 2},
		{other, "a2", "alice", 3, false, 3},
		{h, "a3", "alice", 3, true, 3},
		{other, "a3", "alice", 3, true, 3},
		{h, "a3", "alice", 1, true, 3},
		{h, "b0", "bob", 3, false, 3}, // others are not counted
		{h, "b1", "bob", 3, false, 3},
		{h, "n0", "", 1, false, 3},
		{h, "n1", "", 1, true, 3},
		{h, "a3", "alice", 0, false, 4}, // unbounded
		{h, "a4", "alice", -1, false, 5},
		{h, "a5", "alice", 6, false, 6},
		{other, "a6", "alice", 6, true, 6},
		{h, "a6", "alice", 7, false, 7},
	}
	for i, s := range steps {
		err := s.s.CreateTask(ctx, minimalTask(s.id, s.who, h.ttl), s.limit)
		switch {
		case s.wantFull && !errors.Is(err, ErrFull):
			t.Fatalf("step %d: CreateTask(%s of %q, limit %d): %v, want ErrFull", i, s.id, s.who, s.limit, err)
		case !s.wantFull && err != nil:
			t.Fatalf("step %d: CreateTask(%s of %q, limit %d): %v", i, s.id, s.who, s.limit, err)
		}
		if got, err := h.ListTasks(ctx, "alice"); err != nil || len(got) != s.heldAfter {
			t.Fatalf("step %d: alice holds %d tasks (%v), want %d", i, len(got), err, s.heldAfter)
		}
	}
	if _, err := h.GetTask(ctx, "n1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of a task refused with ErrFull: %v, want ErrNotFound", err)
	}
}

// testTaskConcurrentCreate: of creates racing for a principal's last places, on every store, exactly limit succeed.
func testTaskConcurrentCreate(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	stores := []TaskStore{h}
	if h.shared {
		stores = append(stores, h.second(t))
	}
	const racers, limit = 20, 5
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			errs[i] = stores[i%len(stores)].CreateTask(ctx, minimalTask(fmt.Sprintf("c%d", i), "carol", h.ttl), limit)
		})
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, ErrFull):
			t.Errorf("create %d: %v, want nil or ErrFull", i, err)
		}
	}
	if created != limit {
		t.Errorf("%d creates succeeded, want %d", created, limit)
	}
	if got, err := h.ListTasks(ctx, "carol"); err != nil || len(got) != limit {
		t.Errorf("carol holds %d tasks (%v), want %d", len(got), err, limit)
	}
}

// testTaskTTL: a task is gone TTL after its Created, however often it was updated; then it is not counted, not
// listed, and its id is free.
func testTaskTTL(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if err := h.CreateTask(ctx, minimalTask("old", "alice", h.ttl), 0); err != nil {
		t.Fatal(err)
	}
	backdated := minimalTask("backdated", "alice", h.ttl)
	backdated.Created = time.Now().Add(-h.ttl / 2)
	if err := h.CreateTask(ctx, backdated, 0); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	if _, err := h.GetTask(ctx, "backdated"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of a task created 1.1 TTL ago: %v, want ErrNotFound", err)
	}
	err := h.UpdateTask(ctx, "old", func(r *TaskRecord) error { r.StatusMessage = "still going"; return nil })
	if err != nil {
		t.Fatalf("UpdateTask 0.6 TTL after the create: %v", err)
	}
	sameList(t, h, "alice", []string{"old"}, "0.6 TTL after the first creates")
	if err := h.CreateTask(ctx, minimalTask("new", "alice", h.ttl), 0); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10) // 1.2 TTL since "old" was created, 0.6 since it was updated and "new" created
	// "new" first: with real time, the more that comes before, the older it is.
	if _, err := h.GetTask(ctx, "new"); err != nil {
		t.Errorf("GetTask of a task 0.6 TTL old: %v", err)
	}
	if got, err := h.GetTask(ctx, "old"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of a task created 1.2 TTL ago, updated 0.6 ago: %+v, %v; want ErrNotFound", got, err)
	}
	if err := h.UpdateTask(ctx, "old", func(*TaskRecord) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateTask of an expired task: %v, want ErrNotFound", err)
	}
	sameList(t, h, "alice", []string{"new"}, "1.2 TTL after the first creates")
	// Expired tasks do not count: alice holds one of 2 (three, if "old" and "backdated" still counted).
	if err := h.CreateTask(ctx, minimalTask("old", "alice", h.ttl), 2); err != nil {
		t.Errorf("CreateTask over an expired task, at 1 of 2: %v", err)
	}
}

// testTaskUpdate: UpdateTask is a read-modify-write of everything but ID, Principal, Created and TTL; fn's error is
// returned as is and nothing is stored; the store keeps its own copy of what fn leaves.
func testTaskUpdate(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	rec := sampleTask("t1", "alice", h.ttl)
	if err := h.CreateTask(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}

	boom := errors.New("boom")
	err := h.UpdateTask(ctx, "t1", func(r *TaskRecord) error {
		sameTask(t, *r, rec, "what fn is given")
		r.Status = TaskFailed
		r.Result[2] = 'X' // in place: fn's copy
		return boom
	})
	if err != boom {
		t.Fatalf("UpdateTask returned %v, want fn's error as is", err)
	}
	got, _ := h.GetTask(ctx, "t1")
	sameTask(t, got, rec, "after fn failed")

	result := []byte(`{"content":[{"type":"text","text":"done"}]}`)
	updated := time.Now().Add(time.Second)
	err = h.UpdateTask(ctx, "t1", func(r *TaskRecord) error {
		r.Status = TaskCompleted
		r.StatusMessage = ""
		r.Updated = updated
		r.Owner = "http://10.0.0.2:8080/mcp"
		r.PollInterval = 0
		r.Result = result
		r.Error = nil
		r.InputRequests = nil
		r.InputResponses = json.RawMessage(`{}`)
		r.CancelRequested = false
		// Ignored:
		r.ID = "t2"
		r.Principal = "mallory"
		r.Endpoint = "ops"
		r.Created = r.Created.Add(-time.Hour)
		r.TTL = MaxTaskTTL
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	result[2] = 'X' // fn's slice stays the caller's
	want := rec.Clone()
	want.Status, want.StatusMessage, want.Updated, want.Owner, want.PollInterval = TaskCompleted, "", updated,
		"http://10.0.0.2:8080/mcp", 0
	want.Result = json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)
	want.Error, want.InputRequests, want.InputResponses, want.CancelRequested = nil, nil, json.RawMessage(`{}`), false
	got, err = h.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	sameTask(t, got, want, "after the update")
	if _, err := h.GetTask(ctx, "t2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of the id fn set: %v, want ErrNotFound", err)
	}
	sameList(t, h, "alice", []string{"t1"}, "after the update")
	sameList(t, h, "mallory", nil, "after the update")
}

// testTaskConcurrentUpdate: updates racing on one task, from several goroutines (and stores), lose nothing.
func testTaskConcurrentUpdate(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	// A TTL far past the harness's: 120 racing updates on a loaded machine can take longer than h.ttl (a second on
	// redis-server), and the task expiring under them is not what this test is about.
	if err := h.CreateTask(ctx, minimalTask("busy", "alice", time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	stores := []TaskStore{h}
	if h.shared {
		stores = append(stores, h.second(t))
	}
	const workers, each = 8, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				err := stores[w%len(stores)].UpdateTask(ctx, "busy", func(r *TaskRecord) error {
					r.StatusMessage += fmt.Sprintf("w%d-%d;", w, i)
					r.PollInterval += time.Millisecond
					return nil
				})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec, err := h.GetTask(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if rec.PollInterval != workers*each*time.Millisecond {
		t.Errorf("PollInterval %v, want %v: updates were lost", rec.PollInterval, workers*each*time.Millisecond)
	}
	parts := strings.Split(strings.TrimSuffix(rec.StatusMessage, ";"), ";")
	seen := map[string]bool{}
	for _, p := range parts {
		seen[p] = true
	}
	if len(parts) != workers*each || len(seen) != workers*each {
		t.Errorf("%d appends (%d distinct), want %d", len(parts), len(seen), workers*each)
	}
}

// testTaskList: ListTasks returns one principal's tasks, newest first, whole, and the caller's to change.
func testTaskList(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	sameList(t, h, "alice", nil, "an empty store")
	base := time.Now()
	step := h.ttl / 100
	task := func(id, principal string, age int) TaskRecord {
		r := sampleTask(id, principal, h.ttl)
		r.Created = base.Add(-time.Duration(age) * step)
		return r
	}
	recs := []TaskRecord{
		task("a-3", "alice", 3), task("b-1", "bob", 1), task("a-1", "alice", 1), task("n-2", "", 2),
		task("a-4", "alice", 4), task("a-2", "alice", 2), task("b-0", "bob", 0), task("alice", "alice2", 0),
		task("x-1", "\xff\xfe", 1), task("x-2", "\xfe\xff", 2),
	}
	for _, r := range recs {
		if err := h.CreateTask(ctx, r, 0); err != nil {
			t.Fatal(err)
		}
	}
	sameList(t, h, "alice", []string{"a-1", "a-2", "a-3", "a-4"}, "alice")
	sameList(t, h, "bob", []string{"b-0", "b-1"}, "bob")
	sameList(t, h, "", []string{"n-2"}, "no principal")
	sameList(t, h, "alice2", []string{"alice"}, "alice2")
	sameList(t, h, "Alice", nil, "Alice")
	sameList(t, h, "\xff\xfe", []string{"x-1"}, "a principal that is not UTF-8") // nor JSON's to mangle

	got, err := h.ListTasks(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []int{2, 5, 0, 4} {
		sameTask(t, got[i], recs[id], "listed "+recs[id].ID)
	}
	got[0].Result[2] = 'X'
	got[0].Status = TaskCancelled
	again, _ := h.ListTasks(ctx, "alice")
	sameTask(t, again[0], recs[2], "listed after changing what was listed")
}

// testTaskShared: a second store over the same data (another replica) sees the tasks, their updates and the
// lists; a Memory made afresh (a restart) does not.
func testTaskShared(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	rec := sampleTask("t1", "alice", h.ttl)
	if err := h.CreateTask(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	s := h.second(t)
	if !h.shared {
		if _, err := s.GetTask(ctx, "t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetTask on a new Memory: %v, want ErrNotFound", err)
		}
		sameList(t, s, "alice", nil, "a new Memory")
		return
	}
	got, err := s.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	sameTask(t, got, rec, "GetTask on the second store")
	if err := s.UpdateTask(ctx, "t1", func(r *TaskRecord) error { r.CancelRequested = false; return nil }); err != nil {
		t.Fatal(err)
	}
	rec.CancelRequested = false
	got, _ = h.GetTask(ctx, "t1")
	sameTask(t, got, rec, "GetTask of the first store after the second updated")
	sameList(t, s, "alice", []string{"t1"}, "the second store")
}

// testTaskCancelled: with a cancelled context every TaskStore method fails with an error wrapping ctx.Err().
func testTaskCancelled(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	for name, op := range taskOps(h.Store) {
		if err := op(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}

// taskOps calls every TaskStore method once, with valid arguments, for the tests of failures.
func taskOps(s TaskStore) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"CreateTask": func(ctx context.Context) error {
			return s.CreateTask(ctx, minimalTask(fmt.Sprintf("op%d", prefixSeq.Add(1)), "alice", time.Minute), 0)
		},
		"GetTask": func(ctx context.Context) error { _, err := s.GetTask(ctx, "t"); return err },
		"UpdateTask": func(ctx context.Context) error {
			return s.UpdateTask(ctx, "t", func(*TaskRecord) error { return nil })
		},
		"ListTasks": func(ctx context.Context) error { _, err := s.ListTasks(ctx, "alice"); return err },
	}
}

// TestTasksMiniredisDown: every TaskStore method fails, quickly, with ErrUnavailable while miniredis is down, and
// works again once it is back, with the same client.
func TestTasksMiniredisDown(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, mr.Addr()), "")
	t.Cleanup(r.Shutdown)
	if err := r.CreateTask(ctx, minimalTask("t", "alice", time.Minute), 0); err != nil {
		t.Fatal(err)
	}
	mr.Close()
	for name, op := range taskOps(r) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		start := time.Now()
		err := op(ctx)
		cancel()
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want ErrUnavailable", name, err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s with Redis down took %v", name, took)
		}
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ping after restart", func() bool { return r.Ping(ctx) == nil })
	for name, op := range taskOps(r) {
		if err := op(ctx); err != nil {
			t.Errorf("%s after the restart: %v", name, err)
		}
	}
}

// TestRedisTaskKeys checks the key layout of tasks (redis_tasks.go): with the prefix, the hash tags, the expiry
// at Created+TTL on the record and on the index, which UpdateTask leaves where it was.
func TestRedisTaskKeys(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	now := time.Now()
	mr.SetTime(now) // Redis TIME, which PEXPIREAT's expiry is in, stands still unless moved
	ctx := t.Context()
	for _, prefix := range []string{"", "tenant-a:"} {
		r := NewRedis(newClient(t, mr.Addr()), prefix)
		want := prefix
		if want == "" {
			want = DefaultPrefix
		}
		if err := r.CreateTask(ctx, minimalTask("t1", "alice", time.Minute), 0); err != nil {
			t.Fatal(err)
		}
		backdated := minimalTask("t2", "alice", time.Minute)
		backdated.Created = time.Now().Add(-20 * time.Second)
		if err := r.CreateTask(ctx, backdated, 0); err != nil {
			t.Fatal(err)
		}
		key, index := want+"task:{t1}", r.tasksKey("alice")
		if !strings.HasPrefix(index, want+"tasks:{") || hashTag(index) == "alice" || len(hashTag(index)) != 32 {
			t.Errorf("alice's index is %s; want %stasks:{<hash of alice>}", index, want)
		}
		for _, k := range []string{key, index} {
			if !mr.Exists(k) {
				t.Fatalf("prefix %q: no key %s; keys: %q", prefix, k, mr.Keys())
			}
			// Created+TTL, by the replica's clock, less what CreateTask took: a minute, give or take.
			if ttl := mr.TTL(k); ttl <= 59*time.Second || ttl > time.Minute {
				t.Errorf("key %s has a TTL of %v, want about a minute", k, ttl)
			}
		}
		if ttl := mr.TTL(want + "task:{t2}"); ttl <= 39*time.Second || ttl > 40*time.Second {
			t.Errorf("the task created 20s ago has a TTL of %v, want about 40s", ttl)
		}
		if tag := hashTag(key); tag != "t1" {
			t.Errorf("key %s hashes by %q, want t1", key, tag)
		}
		exp := mr.HGet(key, "exp")
		if score, err := mr.ZScore(index, "t1"); err != nil || fmt.Sprint(int64(score)) != exp {
			t.Errorf("t1's score in the index %v (%v), its record's exp %s: want them equal", score, err, exp)
		}
		var rec TaskRecord
		if err := json.Unmarshal([]byte(mr.HGet(key, "rec")), &rec); err != nil || rec.Principal != "alice" {
			t.Errorf("field rec of %s: %+v, %v", key, rec, err)
		}

		// UpdateTask keeps the expiry, now and after time moved on.
		before := mr.TTL(key)
		update := func() {
			t.Helper()
			if err := r.UpdateTask(ctx, "t1", func(r *TaskRecord) error { r.StatusMessage += "."; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		update()
		if after := mr.TTL(key); after != before {
			t.Errorf("TTL %v after an update, %v before", after, before)
		}
		now = now.Add(30 * time.Second)
		mr.SetTime(now)
		mr.FastForward(30 * time.Second)
		update()
		if after := mr.TTL(key); after != before-30*time.Second {
			t.Errorf("TTL %v after an update 30s on, want %v", after, before-30*time.Second)
		}
		r.Shutdown()
	}
	for _, k := range mr.Keys() {
		if !strings.HasPrefix(k, DefaultPrefix) && !strings.HasPrefix(k, "tenant-a:") {
			t.Errorf("key %q outside the prefixes", k)
		}
	}
}

// TestRedisCreateTaskRetry: the second step of a CreateTask that go-redis retries after a timeout, whose first run
// stored the record, succeeds; another call with the id is refused. A retried reservation is not counted twice.
func TestRedisCreateTaskRetry(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, mr.Addr()), "")
	defer r.Shutdown()
	index := r.tasksKey("alice")
	var exp int64
	for i, want := range []int64{1, 2} {
		res, err := reserveTask.Run(ctx, r.c, []string{index}, "t", 60_000, 1).Int64Slice()
		if err != nil || len(res) != 2 || res[0] != want || (i > 0 && res[1] != exp) {
			t.Fatalf("reserveTask run %d = %v, %v; want {%d, %d}", i+1, res, err, want, exp)
		}
		exp = res[1]
	}
	if res, err := reserveTask.Run(ctx, r.c, []string{index}, "u", 60_000, 1).Int64Slice(); err != nil || res[0] != 0 {
		t.Fatalf("reserveTask of another task at the limit = %v, %v; want {0, 0}", res, err)
	}
	rec := `{"id":"t","principal":"alice","status":"working","ttl":60000000000}`
	for _, tc := range []struct {
		nonce string
		want  int
	}{{"call-1", 1}, {"call-1", 1}, {"call-2", 0}} {
		n, err := createTask.Run(ctx, r.c, []string{r.taskKey("t")}, rec, exp, tc.nonce, "alice").Int()
		if err != nil || n != tc.want {
			t.Errorf("createTask of call %s = %d, %v; want %d", tc.nonce, n, err, tc.want)
		}
	}
	if got, err := r.GetTask(ctx, "t"); err != nil || got.Principal != "alice" {
		t.Errorf("GetTask = %+v, %v", got, err)
	}
}

// TestRedisTaskScriptReload checks the EVAL fallback of each task script when the server lost its scripts.
func TestRedisTaskScriptReload(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	c := newClient(t, mr.Addr())
	r := NewRedis(c, "")
	defer r.Shutdown()
	for i := range 2 {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.CreateTask(ctx, minimalTask(fmt.Sprint(i), "alice", time.Minute), 0); err != nil {
			t.Fatalf("CreateTask after SCRIPT FLUSH: %v", err)
		}
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ListTasks(ctx, "alice"); err != nil || len(got) != i+1 {
			t.Fatalf("ListTasks after SCRIPT FLUSH: %d tasks, %v; want %d", len(got), err, i+1)
		}
	}
}

// TestMemoryTaskSweeps checks that expired tasks do not pile up in a Memory that is only written to.
func TestMemoryTaskSweeps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		defer m.Shutdown()
		ctx := t.Context()
		for i := range 100 {
			if err := m.CreateTask(ctx, minimalTask(fmt.Sprint(i), fmt.Sprint(i%7), time.Second), 0); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * taskSweepEvery) // the bubble's clock: instant
		if err := m.CreateTask(ctx, minimalTask("last", "p", time.Second), 0); err != nil {
			t.Fatal(err)
		}
		g := m.memTasks
		g.mu.Lock()
		tasks, principals := len(g.tasks), len(g.byPrincipal)
		g.mu.Unlock()
		if tasks != 1 || principals != 1 {
			t.Errorf("after the sweep: %d tasks of %d principals; want 1, 1", tasks, principals)
		}
	})
}

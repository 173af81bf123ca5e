package routing

// The byte budget of kept task results (taskbudget.go, issue 31, item 4).

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestTaskResultBudget: results nobody reads are kept within a budget per caller and per replica, each counted
// once, by the bytes the record keeps. A result past a budget fails its task with an error that names the limit
// (tasks/result and tasks/get say it); a caller whose budget is spent gets no new task (a 2025-11-25 task call is
// refused, saying so; a 2026-07-28 call is answered directly); the budget comes back when the tasks expire.
func TestTaskResultBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perCaller, perReplica = 2 << 20, 3 << 20
		r, j, store := startTasks(t, func(o *Options) {
			o.Tasks.MaxResultBytesPerPrincipal, o.Tasks.MaxResultBytes = perCaller, perReplica
		})
		h := &r.tasks
		legacy := func(principal string) *Session {
			return r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Principal: principal, Capabilities: json.RawMessage(`{}`)})
		}
		alice, bob := legacy("alice"), legacy("bob")
		// run makes a task of slow for s, answers it with text and returns its id.
		run := func(s *Session, text string) string {
			t.Helper()
			m := request(t, r, s, toolCallRaw("s", "jobs__slow", `,"task":{"ttl":5000}`))
			id := field(m, "task", "taskId")
			if id == "" {
				t.Fatalf("no task: %s", m.Raw())
			}
			synctest.Wait()
			j.release("slow", text)
			synctest.Wait()
			return id
		}
		keptBytes := func(ids ...string) int64 {
			var n int64
			for _, id := range ids {
				rec, err := store.GetTask(r.ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				n += int64(len(rec.Result) + len(rec.Error))
			}
			return n
		}

		big := run(alice, strings.Repeat("a", perCaller-200<<10))
		if m := request(t, r, alice, taskReq("g", "tasks/get", big, "")); field(m, "status") != "completed" {
			t.Fatalf("a result within the budget: %s", m.Raw())
		}
		if mine, total := h.kept("alice"); mine != keptBytes(big) || total != mine {
			t.Errorf("the ledger counts %d bytes for alice, %d in all; the store keeps %d for her task (once)", mine, total, keptBytes(big))
		}

		// Past alice's budget: the task fails, saying why; nothing more is counted.
		over := run(alice, strings.Repeat("b", 300<<10))
		res := request(t, r, alice, taskReq("r", "tasks/result", over, ""))
		if e := res.Error(); e == nil || !strings.Contains(string(e), "tasks.maxResultBytesPerPrincipal") || !strings.Contains(string(e), "2.0 MiB") {
			t.Errorf("tasks/result of a result past the caller's budget: %.300s", res.Raw())
		}
		if m := request(t, r, alice, taskReq("g", "tasks/get", over, "")); field(m, "status") != "failed" || !strings.Contains(field(m, "statusMessage"), "per caller") {
			t.Errorf("tasks/get of it: %.300s", m.Raw())
		}
		if mine, _ := h.kept("alice"); mine != keptBytes(big, over) {
			t.Errorf("after a refused result the ledger counts %d bytes for alice, the store keeps %d", mine, keptBytes(big, over))
		}

		// A small result is always kept; once alice's budget is spent she gets no new task.
		mine, _ := h.kept("alice")
		if mine > perCaller-1<<10 {
			t.Fatalf("alice holds %d bytes after a refused result, her budget is %d", mine, perCaller)
		}
		const wrapper = len(`{"content":[{"type":"text","text":""}]}`)
		small := run(alice, strings.Repeat("c", perCaller-int(mine)-wrapper-10)) // 10 bytes left
		if m := request(t, r, alice, taskReq("g", "tasks/get", small, "")); field(m, "status") != "completed" {
			t.Fatalf("a result that fits what is left: %.300s", m.Raw())
		}
		run(alice, "tiny") // within smallResult: kept past the budget
		if m := request(t, r, alice, toolCallRaw("s2", "jobs__slow", `,"task":{}`)); !strings.Contains(string(m.Raw()), `"code":-32000`) ||
			!strings.Contains(string(m.Raw()), "tasks.maxResultBytesPerPrincipal") {
			t.Errorf("a task call once alice's budget is spent: %.300s", m.Raw())
		}
		modern := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(tasksCaps)})
		direct := make(chan string, 1)
		go func() { direct <- string(request(t, r, modern, toolCallRaw("m", "jobs__slow", "")).Raw()) }()
		time.Sleep(time.Second) // past the sync window
		synctest.Wait()
		j.release("slow", "answered directly")
		if got := <-direct; !strings.Contains(got, "answered directly") || strings.Contains(got, "taskId") {
			t.Errorf("a 2026-07-28 call once alice's budget is spent: %.300s, want its result, no task", got)
		}

		// Bob's budget is his own, but the replica's is nearly spent.
		bobs := run(bob, strings.Repeat("d", 1<<20))
		res = request(t, r, bob, taskReq("r", "tasks/result", bobs, ""))
		if e := res.Error(); e == nil || !strings.Contains(string(e), "tasks.maxResultBytes;") || !strings.Contains(string(e), "3.0 MiB") {
			t.Errorf("tasks/result of a result past the replica's budget: %.300s", res.Raw())
		}

		// The tasks expire: the budget is back.
		time.Sleep(6 * time.Second)
		synctest.Wait()
		again := run(alice, strings.Repeat("e", perCaller-200<<10))
		if m := request(t, r, alice, taskReq("g", "tasks/get", again, "")); field(m, "status") != "completed" {
			t.Errorf("after the earlier tasks expired: %.300s", m.Raw())
		}
		if mine, total := h.kept("alice"); mine != keptBytes(again) || total < mine || total > mine+smallResult {
			t.Errorf("after expiry the ledger counts %d bytes for alice, %d in all; want %d", mine, total, keptBytes(again))
		}
	})
}

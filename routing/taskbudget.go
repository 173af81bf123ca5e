package routing

import (
	"fmt"
	"sync"
	"time"
)

// The byte budget of kept task results (issue 31, item 4). A finished task keeps its result for the task's TTL
// whether or not anybody reads it, so results nobody reads could hold a replica's memory (the memory store) or
// fill Redis: 20 tasks of a tool that answers 15 MB are 300 MB for an hour. The replica that runs a task accounts
// the bytes it keeps for it (its result, or its error), once per task, until the task's TTL ends, per caller and
// in all; a result that would take either past its budget is not kept: the task fails with an error that names
// the limit, and while a budget is spent no task is made for its caller (a 2026-07-28 call is then answered
// directly, a 2025-11-25 task call refused).
//
// The ledger is this replica's: with several replicas a caller may hold a budget on each. What it counts is the
// bytes the record keeps, not the heap: the Go heap may grow to about twice its live bytes before a collection
// (GOGC=100), so results worth the replica's budget take up to twice it in memory.

// Default budgets: 16 MiB per caller is one result of the largest size a task keeps (state.MaxTaskSize), and
// 64 MiB per replica, at most ~128 MiB of heap, is a quarter of the chart's 512 MiB memory limit, four callers'
// full budgets.
const (
	defaultMaxResultBytes             = 64 << 20
	defaultMaxResultBytesPerPrincipal = 16 << 20
)

// resultLedger is what the replica's tasks keep, by task.
type resultLedger struct {
	mu          sync.Mutex
	kept        map[string]keptResult // task id →
	total       int64
	byPrincipal map[string]int64
	nextSweep   time.Time
}

// resultSweepEvery paces the ledger's sweep of expired tasks when no budget is near.
const resultSweepEvery = time.Minute

// keptResult is one task's kept bytes, counted until the task's TTL ends.
type keptResult struct {
	principal string
	n         int64
	until     time.Time
}

func (h *taskHost) maxResultBytes() int64 {
	if n := h.opts.MaxResultBytes; n > 0 {
		return n
	}
	return defaultMaxResultBytes
}

func (h *taskHost) maxResultBytesPerPrincipal() int64 {
	if n := h.opts.MaxResultBytesPerPrincipal; n > 0 {
		return min(n, h.maxResultBytes())
	}
	return min(defaultMaxResultBytesPerPrincipal, h.maxResultBytes())
}

// errResultBudget is a task result past a budget.
type errResultBudget struct {
	n, held, limit int64
	perCaller      bool
}

func (e *errResultBudget) Error() string {
	if e.perCaller {
		return fmt.Sprintf("the tool's result (%s) would take your kept task results past the %s this gateway keeps per caller "+
			"(tasks.maxResultBytesPerPrincipal; you hold %s until your earlier tasks expire): call the tool again without a task, or later",
			mib(e.n), mib(e.limit), mib(e.held))
	}
	return fmt.Sprintf("the tool's result (%s) would take the task results this gateway replica keeps past its %s "+
		"(tasks.maxResultBytes; %s held until earlier tasks expire): call the tool again without a task, or later",
		mib(e.n), mib(e.limit), mib(e.held))
}

// mib writes a byte count for people.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// smallResult is what a task may always keep, past the budgets too: the error a task fails with, when its
// result is refused, or when its replica stops, must be written; maxPerPrincipal bounds how many there are.
const smallResult = 4 << 10

// keep accounts n bytes kept for task id of principal until until, replacing what the task had, unless that
// takes the caller or the replica past its budget (and n is more than smallResult); then it changes nothing and
// says why.
func (h *taskHost) keep(id, principal string, n int64, until, now time.Time) error {
	l := &h.results
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept == nil {
		l.kept, l.byPrincipal = map[string]keptResult{}, map[string]int64{}
	}
	prev := l.kept[id].n
	total, mine := l.total-prev+n, l.byPrincipal[principal]-prev+n
	if n > smallResult && (total > h.maxResultBytes() || mine > h.maxResultBytesPerPrincipal()) || !now.Before(l.nextSweep) {
		l.expire(now)
		prev = l.kept[id].n
		total, mine = l.total-prev+n, l.byPrincipal[principal]-prev+n
	}
	switch {
	case n <= smallResult:
	case mine > h.maxResultBytesPerPrincipal():
		return &errResultBudget{n: n, held: l.byPrincipal[principal] - prev, limit: h.maxResultBytesPerPrincipal(), perCaller: true}
	case total > h.maxResultBytes():
		return &errResultBudget{n: n, held: l.total - prev, limit: h.maxResultBytes()}
	}
	l.forget(id)
	if n > 0 {
		l.kept[id] = keptResult{principal: principal, n: n, until: until}
		l.total += n
		l.byPrincipal[principal] += n
	}
	return nil
}

// unkeep forgets what task id kept: its record was not written after all.
func (h *taskHost) unkeep(id string) {
	l := &h.results
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(id)
}

// spent reports why principal may not start another task now: its budget, or the replica's, is spent. "" when
// it may.
func (h *taskHost) spent(principal string, now time.Time) string {
	l := &h.results
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byPrincipal[principal] < h.maxResultBytesPerPrincipal() && l.total < h.maxResultBytes() {
		return ""
	}
	l.expire(now)
	switch {
	case l.byPrincipal[principal] >= h.maxResultBytesPerPrincipal():
		return fmt.Sprintf("your finished tasks keep %s of results, the most this gateway keeps per caller (tasks.maxResultBytesPerPrincipal); "+
			"they are kept until their TTL ends: call the tool without a task, or later", mib(l.byPrincipal[principal]))
	case l.total >= h.maxResultBytes():
		return fmt.Sprintf("this gateway replica keeps %s of task results, the most it keeps (tasks.maxResultBytes); "+
			"they are kept until their TTL ends: call the tool without a task, or later", mib(l.total))
	}
	return ""
}

// kept returns the bytes the ledger counts for principal and in all, for tests and metrics.
func (h *taskHost) kept(principal string) (mine, total int64) {
	l := &h.results
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byPrincipal[principal], l.total
}

// forget drops task id's entry; l.mu is held.
func (l *resultLedger) forget(id string) {
	k, ok := l.kept[id]
	if !ok {
		return
	}
	delete(l.kept, id)
	l.total -= k.n
	if l.byPrincipal[k.principal] -= k.n; l.byPrincipal[k.principal] <= 0 {
		delete(l.byPrincipal, k.principal)
	}
}

// expire drops the entries of tasks whose TTL has ended: the store has forgotten them; l.mu is held. It runs when
// a budget would be exceeded, and otherwise at most once a resultSweepEvery, so that its walk is seldom paid and
// the ledger holds no more than the live tasks and a minute's.
func (l *resultLedger) expire(now time.Time) {
	l.nextSweep = now.Add(resultSweepEvery)
	for id, k := range l.kept {
		if !now.Before(k.until) {
			l.forget(id)
		}
	}
}

package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// wantLimit fails unless err is a *LimitError naming limit.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("error %v, want the %s limit", err, limit)
	}
	if !strings.Contains(err.Error(), limit) {
		t.Errorf("error %q does not name the %s limit", err, limit)
	}
}

// TestLimitsInProcess breaks each limit the script side and the session hold, in process.
func TestLimitsInProcess(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   string
		limits Limits
		limit  string
	}{
		{name: "infinite loop", code: `while (true) {}`, limits: Limits{CPUTime: 50 * time.Millisecond}, limit: LimitCPUTime},
		{name: "loop after awaits", code: `for (let i = 0; i < 3; i++) await tools.echo({text: i}); for (;;) {}`, limits: Limits{CPUTime: 50 * time.Millisecond}, limit: LimitCPUTime},
		{name: "deep recursion", code: `function f(n) { return f(n + 1) + 1 } f(0)`, limit: LimitStackDepth},
		{name: "recursion caught", code: `function f() { f() } try { f() } catch (e) { return "caught" }`, limit: LimitStackDepth},
		{name: "too many calls", code: `for (let i = 0; i < 10; i++) await tools.echo({text: i})`, limits: Limits{MaxCalls: 3}, limit: LimitCalls},
		{name: "too many calls caught", code: `for (let i = 0; i < 10; i++) { try { await tools.echo({text: i}) } catch (e) {} }`, limits: Limits{MaxCalls: 3}, limit: LimitCalls},
		{name: "too many parallel calls", code: `await Promise.all(Array.from({length: 10}, (_, i) => tools.echo({text: i})))`, limits: Limits{MaxCalls: 5}, limit: LimitCalls},
		{name: "too many timers", code: `for (let i = 0; i < 20; i++) setTimeout(() => {}, 10)`, limits: Limits{MaxTimers: 10}, limit: LimitTimers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(Options{Limits: tc.limits})
			defer e.Close()
			_, err := e.Run(context.Background(), Run{Code: tc.code, Tools: fakeTools(), Caller: newFake()})
			wantLimit(t, err, tc.limit)
		})
	}
}

// TestWallTime: a run awaiting a call that never ends, or timers past the wall, ends at its wall time with the
// limit named; a cancelled run ends with the context's error; the calls it made are cancelled.
func TestWallTime(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		cancel     bool
		want       string
	}{
		{name: "hung call", code: `await tools.hang({})`, want: LimitWallTime},
		{name: "timer chain", code: `for (;;) await new Promise(r => setTimeout(r, 1000))`, want: LimitWallTime},
		{name: "cancelled", code: `await tools.hang({})`, cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := NewEngine(Options{Limits: Limits{WallTime: 10 * time.Second}})
				defer e.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel {
					time.AfterFunc(time.Second, cancel)
				}
				start := time.Now()
				_, err := e.Run(ctx, Run{Code: tc.code, Tools: fakeTools(), Caller: newFake()})
				if tc.cancel {
					if !errors.Is(err, context.Canceled) && !strings.Contains(fmtErr(err), "cancelled") {
						t.Fatalf("error %v, want cancellation", err)
					}
					if d := time.Since(start); d != time.Second {
						t.Errorf("cancelled after %s", d)
					}
					return
				}
				wantLimit(t, err, tc.want)
				if d := time.Since(start); d != 10*time.Second {
					t.Errorf("ended after %s, want the wall time", d)
				}
			})
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestConcurrentCalls: a run's calls beyond MaxConcurrent wait for a slot; all complete.
func TestConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.tools["slow"] = func(ctx context.Context, a map[string]any) (json.RawMessage, error) {
			time.Sleep(100 * time.Millisecond) // on the bubble's clock
			return textResult("ok"), nil
		}
		e := NewEngine(Options{Limits: Limits{MaxConcurrent: 3}})
		defer e.Close()
		start := time.Now()
		res, err := e.Run(context.Background(), Run{
			Code:   `const rs = await Promise.all(Array.from({length: 10}, () => tools.slow({}))); return rs.length`,
			Tools:  []Tool{{Name: "slow", ReadOnly: true}},
			Caller: f,
		})
		if err != nil || string(res.Value) != "10" {
			t.Fatalf("run: %v %s", err, res.Value)
		}
		if m := f.maxSeen.Load(); m != 3 {
			t.Errorf("%d calls at once, want 3", m)
		}
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Errorf("took %s, want 4 rounds of 100ms", d)
		}
	})
}

// TestOutputTruncated: output past MaxOutput is cut with a note saying how much; a return value past it is
// printed, cut, and not returned.
func TestOutputTruncated(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		dropped    int
		value      bool
	}{
		{name: "log", code: `for (let i = 0; i < 100; i++) console.log("0123456789")`, dropped: 1100 - 100},
		{name: "value", code: `return "x".repeat(500)`, dropped: 502 - 100},
		{name: "fits", code: `console.log("a"); return [1]`, value: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(Options{Limits: Limits{MaxOutput: 100}})
			defer e.Close()
			res, err := e.Run(context.Background(), Run{Code: tc.code, Caller: newFake()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Truncated != tc.dropped || (res.Value != nil) != tc.value {
				t.Fatalf("truncated %d value %s, want %d %v", res.Truncated, res.Value, tc.dropped, tc.value)
			}
			if tc.dropped > 0 && !strings.Contains(res.Output, "[output truncated: ") {
				t.Errorf("no note in %q", res.Output)
			}
		})
	}
}

// TestPoolBound: runs past Workers wait, and past MaxWaiting are refused with ErrBusy; a waiting run takes
// the slot a finished one frees.
func TestPoolBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewEngine(Options{Workers: 2, MaxWaiting: 1, Limits: Limits{WallTime: time.Minute}})
		defer e.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range 3 {
			wg.Go(func() {
				_, errs[i] = e.Run(ctx, Run{Code: `await tools.hang({})`, Tools: fakeTools(), Caller: newFake()})
			})
		}
		synctest.Wait()
		if _, err := e.Run(ctx, Run{Code: `return 1`}); !errors.Is(err, ErrBusy) {
			t.Fatalf("a fourth run: %v, want ErrBusy", err)
		}
		cancel()
		wg.Wait()
		for _, err := range errs {
			if err == nil {
				t.Error("a cancelled run succeeded")
			}
		}
		if res, err := e.Run(context.Background(), Run{Code: `return 1`}); err != nil || string(res.Value) != "1" {
			t.Fatalf("a run after: %v", err)
		}
	})
}

// TestMemoryDeath reads how workers die (testdata/worker-deaths: gc-fault.txt is a worker's stderr as CI
// caught it during "string doubling"; the others follow the runtime's formats): the runtime's out of memory and
// a fault in the runtime's collector under the data bound are the memory limit; a panic in the interpreter's
// code and a signal from outside are not.
func TestMemoryDeath(t *testing.T) {
	for _, tc := range []struct {
		file string
		want bool
	}{
		{"oom.txt", true},
		{"gc-fault.txt", !raceDetector},
		{"interpreter-panic.txt", false},
		{"user-signal.txt", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "worker-deaths", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := memoryDeath(string(b)); got != tc.want {
				t.Errorf("memoryDeath = %v, want %v", got, tc.want)
			}
		})
	}
}

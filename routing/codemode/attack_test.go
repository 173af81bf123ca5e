package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAttacksWorker breaks the limits only a worker process holds (memory), and others, in a worker: the run
// ends with the limit named, the worker is replaced, and the next run is unaffected.
func TestAttacksWorker(t *testing.T) {
	e := NewEngine(Options{Worker: workerCommand(t), Workers: 1, Memory: 128 << 20,
		Limits: Limits{CPUTime: 5 * time.Second, WallTime: 20 * time.Second}})
	defer e.Close()
	for _, tc := range []struct {
		name, code string
		limits     Limits
		limit      string // or
		scriptErr  string
	}{
		{name: "memory bomb", code: `const a = []; for (;;) a.push(new Array(1e5).fill(a.length))`, limit: LimitMemory},
		{name: "string doubling", code: `let s = "x"; for (;;) s = s + s`, limit: LimitMemory, scriptErr: "RangeError"},
		{name: "huge string", code: `return "x".repeat(2 ** 31).length`, limit: LimitMemory, scriptErr: "RangeError"},
		{name: "infinite loop", code: `for (;;) {}`, limits: Limits{CPUTime: 100 * time.Millisecond}, limit: LimitCPUTime},
		{name: "deep recursion", code: `const f = n => f(n + 1) + 1; f(0)`, limit: LimitStackDepth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if raceDetector && tc.limit == LimitMemory {
				t.Skip("the race detector's shadow memory counts against RLIMIT_DATA, so a race build's worker has no memory bound; .ci/test runs this package without -race too")
			}
			_, err := e.Run(context.Background(), Run{Code: tc.code, Tools: fakeTools(), Caller: newFake(), Limits: tc.limits})
			var se *ScriptError
			if tc.scriptErr != "" && errors.As(err, &se) && strings.Contains(se.Message, tc.scriptErr) {
				t.Logf("refused by the interpreter: %v", err)
			} else {
				wantLimit(t, err, tc.limit)
			}
			res, err := e.Run(context.Background(), Run{Code: `return (await tools.add({a: 1, b: 2})).sum`, Tools: fakeTools(), Caller: newFake()})
			if err != nil || string(res.Value) != "3" {
				t.Fatalf("the next run: %v %s", err, res.Value)
			}
		})
	}
}

// TestAttacksTools: the script cannot change which tool a call reaches, nor reach a tool outside its set:
// tools is frozen, has no prototype, cannot be replaced, and only exact names are members.
func TestAttacksTools(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		want       string // the value, JSON
		calls      []string
		refused    []string // names asked of tools outside its set, which Run.Refused hears
	}{
		{name: "defineProperty", code: `try { Object.defineProperty(tools, "echo", {value: () => 1}) } catch (e) { return e.name }`, want: `"TypeError"`},
		{name: "assign member", code: `tools.echo = () => "fake"; return (await tools.echo({text: "real"}))[0].text`, want: `"real"`, calls: []string{"echo"}},
		{name: "add member", code: `tools.evil = 1; return typeof tools.evil`, want: `"undefined"`, refused: []string{"evil"}},
		{name: "__proto__", code: `tools.__proto__ = {evil: () => 1}; return typeof tools.evil`, want: `"undefined"`, refused: []string{"evil"}},
		{name: "setPrototypeOf", code: `try { Object.setPrototypeOf(tools, {evil: () => 1}) } catch (e) { return e.name }`, want: `"TypeError"`},
		{name: "Object.prototype", code: `Object.prototype.evil = () => 1; return typeof tools.evil`, want: `"undefined"`, refused: []string{"evil"}},
		{name: "replace tools", code: `globalThis.tools = {echo: () => "fake"}; return (await tools.echo({text: "real"}))[0].text`, want: `"real"`, calls: []string{"echo"}},
		{name: "delete member", code: `delete tools.echo; return typeof tools.echo`, want: `"function"`},
		{name: "rebound function", code: `const f = tools.echo; const o = {add: f}; return (await o.add({text: "e"}))[0].text`, want: `"e"`, calls: []string{"echo"}},
		{name: "look-alike", code: `try { await tools["еcho"]({}) } catch (e) { return e.name }`, want: `"TypeError"`, refused: []string{"еcho"}},
		{name: "look-alike fullwidth", code: `return typeof tools["ｅｃｈｏ"]`, want: `"undefined"`, refused: []string{"ｅｃｈｏ"}},
		{name: "not in the set", code: `return typeof tools.secret`, want: `"undefined"`, refused: []string{"secret"}},
		{name: "call out of the set", code: `try { await tools.secret({}) } catch (e) { return e.name + ": " + e.message }`,
			want: `"TypeError: Object has no member 'secret'"`, refused: []string{"secret"}},
		{name: "the language's own names", code: `const t = await tools; return [typeof t, JSON.stringify(tools), String(Object.keys(tools).length), typeof tools.constructor]`,
			want: `["object","{}","2","undefined"]`},
		{name: "run_script", code: `return typeof tools.run_script`, want: `"undefined"`, refused: []string{"run_script"}},
		{name: "members", code: `return Object.keys(tools).sort()`, want: `["add","echo"]`},
		{name: "no require or process", code: `return [typeof require, typeof process, typeof fetch, typeof XMLHttpRequest]`, want: `["undefined","undefined","undefined","undefined"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			e := NewEngine(Options{})
			defer e.Close()
			var refused []string
			res, err := e.Run(context.Background(), Run{Code: tc.code, Caller: f,
				Tools:   []Tool{{Name: "echo", ReadOnly: true}, {Name: "add", ReadOnly: true}},
				Refused: func(name string) { refused = append(refused, name) }})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if string(res.Value) != tc.want {
				t.Errorf("value %s, want %s", res.Value, tc.want)
			}
			if got := f.called(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
			if !slices.Equal(refused, tc.refused) {
				t.Errorf("refused %q, want %q", refused, tc.refused)
			}
		})
	}
}

// TestRefusedNames: the names a script asks of tools outside its set reach Run.Refused across the worker's pipe
// as in process, however the run ends, each once and at most maxUnknown of them.
func TestRefusedNames(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts Options
	}{{"in process", Options{}}, {"worker", Options{Worker: workerCommand(t), Workers: 1}}} {
		e := NewEngine(mode.opts)
		for _, tc := range []struct {
			name, code string
			want       []string
		}{
			{"returns", `tools.a; tools.b; tools.a; return 1`, []string{"a", "b"}},
			{"throws", `tools.gone; throw new Error("x")`, []string{"gone"}},
			{"many", `for (let i = 0; i < 100; i++) tools["t" + i]; return 1`,
				[]string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12", "t13", "t14", "t15"}},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				var got []string
				_, _ = e.Run(context.Background(), Run{Code: tc.code, Caller: newFake(), Tools: fakeTools(),
					Refused: func(name string) { got = append(got, name) }})
				if !slices.Equal(got, tc.want) {
					t.Errorf("refused %q, want %q", got, tc.want)
				}
			})
		}
		e.Close()
	}
}

// TestAttacksRunScript: run_script is never in a run's tool set.
func TestAttacksRunScript(t *testing.T) {
	e := NewEngine(Options{})
	defer e.Close()
	_, err := e.Run(context.Background(), Run{Code: `await tools.run_script({code: "1"})`, Caller: newFake(),
		Tools: []Tool{{Name: MetaTool, ReadOnly: true}}})
	if err == nil || !strings.Contains(err.Error(), "does not nest") {
		t.Fatalf("error %v", err)
	}
}

// scriptedConn is a script side that sends frames of its own: what a subverted worker could send.
type scriptedConn struct {
	out     []frame
	mu      sync.Mutex
	replies []frame
	aborted chan struct{}
	once    sync.Once
}

func (c *scriptedConn) send(f frame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.T == frameResult {
		c.replies = append(c.replies, f)
	}
	return nil
}

func (c *scriptedConn) recv() (frame, error) {
	if len(c.out) == 0 {
		<-c.aborted
		return frame{}, errors.New("aborted")
	}
	f := c.out[0]
	c.out = c.out[1:]
	return f, nil
}

func (c *scriptedConn) abort()                  { c.once.Do(func() { close(c.aborted) }) }
func (c *scriptedConn) failure(err error) error { return err }

// TestAttacksSubvertedWorker: the parent does not trust the script side: a call to a name outside the set
// (a look-alike) is refused, and heard by Run.Refused, and calls past the budget end the run.
func TestAttacksSubvertedWorker(t *testing.T) {
	f := newFake()
	tools, _ := toolSet([]Tool{{Name: "echo", ReadOnly: true}})
	var refused []string
	s := &session{run: Run{Caller: f, Refused: func(name string) { refused = append(refused, name) }}, limits: Limits{MaxCalls: 2, WallTime: time.Minute}.or(defaultLimits), tools: tools, id: 1}
	call := func(id int64, name string) frame {
		return frame{T: frameCall, Run: 1, ID: id, Name: name, Args: json.RawMessage(`{"text":"x"}`)}
	}
	c := &scriptedConn{aborted: make(chan struct{}), out: []frame{call(1, "еcho"), call(2, "echo"), call(3, "echo"), call(4, "echo")}}
	_, err := s.start(context.Background(), c)
	wantLimit(t, err, LimitCalls)
	if got := f.called(); len(got) > 2 || slices.Contains(got, "еcho") {
		t.Errorf("calls made %v", got)
	}
	if len(c.replies) == 0 || !strings.Contains(c.replies[0].Error, "no tool named") {
		t.Errorf("replies %+v", c.replies)
	}
	if !slices.Equal(refused, []string{"еcho"}) {
		t.Errorf("refused %q, want the look-alike", refused)
	}
}

// approver answers with a fixed decision and counts the questions.
type approver struct {
	mu    sync.Mutex
	d     Decision
	asked []string
}

func (a *approver) Approve(_ context.Context, tool string, args json.RawMessage) (Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, tool+" "+string(args))
	return a.d, nil
}

// TestConsent: a write asks before each call, or once for the run; a declined write throws; without an
// approver writes are refused; reads never ask.
func TestConsent(t *testing.T) {
	const loop = `const out = []; for (let i = 0; i < 3; i++) { try { out.push((await tools.write({v: i}))[0].text) } catch (e) { out.push(e.message) } } await tools.echo({text: 1}); return out`
	for _, tc := range []struct {
		name     string
		approver *approver
		asked    int
		want     string
	}{
		{name: "allow for run", approver: &approver{d: AllowForRun}, asked: 1, want: `["wrote 0","wrote 1","wrote 2"]`},
		{name: "allow once", approver: &approver{d: AllowOnce}, asked: 3, want: `["wrote 0","wrote 1","wrote 2"]`},
		{name: "decline", approver: &approver{d: Decline}, asked: 3, want: `["write is a write and it was declined","write is a write and it was declined","write is a write and it was declined"]`},
		{name: "no approver", want: `["write is a write and this run cannot ask for consent: refused","write is a write and this run cannot ask for consent: refused","write is a write and this run cannot ask for consent: refused"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(Options{})
			defer e.Close()
			r := Run{Code: loop, Tools: fakeTools(), Caller: newFake()}
			if tc.approver != nil {
				r.Approver = tc.approver
			}
			res, err := e.Run(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != tc.want {
				t.Errorf("value %s, want %s", res.Value, tc.want)
			}
			if tc.approver != nil && len(tc.approver.asked) != tc.asked {
				t.Errorf("asked %v, want %d questions", tc.approver.asked, tc.asked)
			}
			if tc.approver != nil && len(tc.approver.asked) > 0 && tc.approver.asked[0] != `write {"v":0}` {
				t.Errorf("first question %q", tc.approver.asked[0])
			}
		})
	}
}

package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestMain makes the test binary its own sandbox worker: the engine re-executes it with "sandbox-worker", as
// the gateway re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-worker" {
		os.Exit(WorkerMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// workerCommand is the worker command line for tests: this binary.
func workerCommand(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "sandbox-worker"}
}

// fakeCaller answers tools/call from a table of functions by name, and records the calls.
type fakeCaller struct {
	tools    map[string]func(ctx context.Context, args map[string]any) (json.RawMessage, error)
	mu       sync.Mutex
	calls    []string
	inFlight atomic.Int64
	maxSeen  atomic.Int64
}

func (f *fakeCaller) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	fn, ok := f.tools[name]
	if !ok {
		return nil, fmt.Errorf("unknown tool %s", name)
	}
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	return fn(ctx, a)
}

func (f *fakeCaller) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// textResult is a tools/call result with one text item.
func textResult(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return b
}

// structured is a tools/call result with structuredContent v.
func structured(v any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "see structuredContent"}}, "structuredContent": v})
	return b
}

// newFake is the fake server of most tests: an echo, an add, a failing tool, a JSON-RPC error, a slow tool that
// waits for its context, and a write.
func newFake() *fakeCaller {
	return &fakeCaller{tools: map[string]func(context.Context, map[string]any) (json.RawMessage, error){
		"echo": func(_ context.Context, a map[string]any) (json.RawMessage, error) {
			return textResult(fmt.Sprint(a["text"])), nil
		},
		"add": func(_ context.Context, a map[string]any) (json.RawMessage, error) {
			x, _ := a["a"].(float64)
			y, _ := a["b"].(float64)
			return structured(map[string]any{"sum": x + y}), nil
		},
		"fails": func(context.Context, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`{"isError":true,"content":[{"type":"text","text":"no such file: /x"}]}`), nil
		},
		"rpcerr": func(context.Context, map[string]any) (json.RawMessage, error) {
			return nil, fmt.Errorf("upstream error -32602: invalid params")
		},
		"hang": func(ctx context.Context, _ map[string]any) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
		"write": func(_ context.Context, a map[string]any) (json.RawMessage, error) {
			return textResult("wrote " + fmt.Sprint(a["v"])), nil
		},
	}}
}

// fakeTools is the run's tool set for newFake: all read-only but write.
func fakeTools() []Tool {
	var ts []Tool
	for _, n := range []string{"echo", "add", "fails", "rpcerr", "hang"} {
		ts = append(ts, Tool{Name: n, ReadOnly: true})
	}
	return append(ts, Tool{Name: "write"})
}

// basicCases are the language's features, run in process and in a worker.
var basicCases = []struct {
	name, code string
	wantOut    string
	wantValue  string
	wantErr    string
}{
	{name: "log and return", code: `console.log("hi", 1, {a: [1]}); return {ok: true}`, wantOut: "hi 1 {\"a\":[1]}\n", wantValue: `{"ok":true}`},
	{name: "typescript", code: "interface P { a: number }\nconst p: P = {a: 2}\nconst f = (x: number): string => `n=${x}`\nreturn f(p.a)", wantValue: `"n=2"`},
	{name: "await content", code: `const r = await tools.echo({text: "yo"}); return r[0].text`, wantValue: `"yo"`},
	{name: "await structured", code: `return (await tools.add({a: 2, b: 3})).sum`, wantValue: `5`},
	{name: "promise all", code: `const rs = await Promise.all([1,2,3].map(i => tools.add({a: i, b: i}))); return rs.map(r => r.sum)`, wantValue: `[2,4,6]`},
	{name: "tool error throws", code: `try { await tools.fails({}) } catch (e) { return e.message + " / " + e.tool }`, wantValue: `"no such file: /x / fails"`},
	{name: "rpc error throws", code: `await tools.rpcerr({})`, wantErr: "upstream error -32602: invalid params"},
	{name: "uncaught", code: `throw new Error("boom")`, wantErr: "boom"},
	{name: "syntax", code: `let = = 2`, wantErr: "script.ts:1"},
	{name: "setTimeout", code: `await new Promise(r => setTimeout(r, 5)); console.log("later"); return 1`, wantOut: "later\n", wantValue: `1`},
	{name: "no clock", code: `return [Date.now(), new Date().getTime()]`, wantValue: `[0,0]`},
	{name: "undefined return", code: `console.log("x")`, wantOut: "x\n"},
	{name: "never settles", code: `await new Promise(() => {})`, wantErr: "nothing will settle"},
	// Plain JavaScript skips esbuild; text TypeScript reads otherwise goes through it.
	{name: "type arguments", code: "function id<T>(x: T): T { return x }\nconst Array2 = 1\nreturn [id<number>(4), id<Array<string>>([\"a\"])]", wantValue: `[4,["a"]]`},
	{name: "type arguments in plain text", code: "const id = (x) => x; const Number = 2\nreturn id<Number>(5)", wantValue: `5`},
	{name: "comparison before parens", code: "const a = 3, b = 2; return [a > (b), a >= (b), [1, 2].map(x => (x * 2)), `${a > b}`]", wantValue: `[true,true,[2,4],"true"]`},
}

func TestRunInProcess(t *testing.T) { testBasic(t, NewEngine(Options{})) }

func TestRunInWorker(t *testing.T) {
	testBasic(t, NewEngine(Options{Worker: workerCommand(t), Workers: 2}))
}

func testBasic(t *testing.T, e *Engine) {
	defer e.Close()
	for _, tc := range basicCases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Run(context.Background(), Run{Code: tc.code, Tools: fakeTools(), Caller: newFake()})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v (output %q)", err, res.Output)
			}
			if res.Output != tc.wantOut || string(res.Value) != tc.wantValue {
				t.Errorf("got output %q value %s, want %q %s", res.Output, res.Value, tc.wantOut, tc.wantValue)
			}
		})
	}
}

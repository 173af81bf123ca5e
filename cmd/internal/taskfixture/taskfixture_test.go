package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncWindow is the gateway's default sync window: what must stay
// synchronous answers or asks well within it, what must become a task works
// longer than it first.
const syncWindow = 500 * time.Millisecond

// bound is how long the test waits for anything that should happen promptly.
const bound = 5 * time.Second

// The answer the test gives every elicitation: a superset of what each asks,
// as the conformance suite's partial-fulfilment check sends.
var answerContent = map[string]any{"name": "Alice", "confirm": true}

// fixture is the server under test with a hook that reports how long a
// slow_compute call labelled "cancel-me" ran.
type fixture struct {
	server  *mcp.Server
	started chan struct{}
	ran     chan time.Duration
}

func newFixture() *fixture {
	f := &fixture{server: newServer(), started: make(chan struct{}, 1), ran: make(chan time.Duration, 1)}
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			var args slowArgs
			if !ok || p.Name != "slow_compute" || json.Unmarshal(p.Arguments, &args) != nil || args.Label != "cancel-me" {
				return next(ctx, method, req)
			}
			f.started <- struct{}{}
			start := time.Now()
			defer func() { f.ran <- time.Since(start) }()
			return next(ctx, method, req)
		}
	})
	return f
}

// era connects a client session to a fixture, speaking one protocol era.
type era struct {
	name string
	// modern: the session speaks 2026-07-28 over stateless HTTP and sees
	// input_required results; otherwise 2025-11-25 over an in-memory session,
	// where the SDK sends elicitation/create and the client's handler answers.
	modern  bool
	connect func(t *testing.T, f *fixture, elicit elicitFunc) *mcp.ClientSession
}

type elicitFunc func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)

var eras = []era{
	{name: "legacy", connect: func(t *testing.T, f *fixture, elicit elicitFunc) *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := f.server.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		c := mcp.NewClient(&mcp.Implementation{Name: "taskfixture-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
		cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}},
	{name: "modern", modern: true, connect: func(t *testing.T, f *fixture, _ elicitFunc) *mcp.ClientSession {
		hs := httptest.NewServer(httpHandler(f.server, true))
		t.Cleanup(hs.Close)
		c := mcp.NewClient(&mcp.Implementation{Name: "taskfixture-test", Version: "1"}, &mcp.ClientOptions{
			// Declares elicitation; never called: the test answers the input requests itself.
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("elicitation/create sent to a 2026-07-28 client")
				return nil, errors.New("unexpected")
			},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		})
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("protocol version %q, want 2026-07-28", v)
		}
		return cs
	}},
}

// answerAll answers every elicitation at once with answerContent.
func answerAll(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: answerContent}, nil
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any, responses mcp.InputResponseMap) (*mcp.CallToolResult, time.Duration) {
	t.Helper()
	return retry(t, cs, name, args, responses, "")
}

// retry calls name with the answers and the requestState of an earlier round.
func retry(t *testing.T, cs *mcp.ClientSession, name string, args any, responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, time.Duration) {
	t.Helper()
	start := time.Now()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args, InputResponses: responses, RequestState: state})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, time.Since(start)
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.NeedsInput() || len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d (input requests: %v)", len(res.Content), keys(res.InputRequests))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func keys(m mcp.InputRequestMap) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// needsInput checks that res asks exactly for want (sorted) with elicitations.
func needsInput(t *testing.T, res *mcp.CallToolResult, want ...string) {
	t.Helper()
	if !res.NeedsInput() || !slices.Equal(keys(res.InputRequests), want) {
		t.Fatalf("want input_required for %v, got needsInput=%t keys %v", want, res.NeedsInput(), keys(res.InputRequests))
	}
	for k, r := range res.InputRequests {
		if _, ok := r.(*mcp.ElicitParams); !ok {
			t.Errorf("input request %q is %T, want an elicitation", k, r)
		}
	}
}

func answers(ks ...string) mcp.InputResponseMap {
	m := mcp.InputResponseMap{}
	for _, k := range ks {
		m[k] = &mcp.ElicitResult{Action: "accept", Content: answerContent}
	}
	return m
}

// elicitTimes answers every elicitation with answerContent and records when
// each arrived, relative to the start it is given.
type elicitTimes struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func (e *elicitTimes) handle(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	e.at = append(e.at, time.Since(e.start))
	e.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: answerContent}, nil
}

func (e *elicitTimes) arrivals() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.at)
}

// group runs subtests concurrently whatever -parallel says (the tools' own
// timings would add up otherwise); wait waits for them.
type group struct {
	t  *testing.T
	wg sync.WaitGroup
}

func (g *group) run(name string, f func(*testing.T)) {
	g.wg.Go(func() { g.t.Run(name, f) })
}

func (g *group) wait() { g.wg.Wait() }

func TestTools(t *testing.T) {
	eg := &group{t: t}
	defer eg.wait()
	for _, e := range eras {
		eg.run(e.name, func(t *testing.T) {
			f := newFixture()
			g := &group{t: t}
			defer g.wait()

			g.run("greet", func(t *testing.T) {
				cs := e.connect(t, f, answerAll)
				res, _ := call(t, cs, "greet", map[string]any{"name": "World"}, nil)
				if got := textOf(t, res); got != "Hello, World!" {
					t.Errorf("greet: %q", got)
				}
			})

			g.run("slow_compute", func(t *testing.T) {
				cs := e.connect(t, f, answerAll)
				res, took := call(t, cs, "slow_compute", map[string]any{"seconds": 0, "label": "instant"}, nil)
				if got := textOf(t, res); !strings.Contains(got, `"instant"`) || took > syncWindow {
					t.Errorf("seconds 0: %q after %v", got, took)
				}
				res, took = call(t, cs, "slow_compute", map[string]any{"seconds": 0.3, "label": "short"}, nil)
				if got := textOf(t, res); !strings.Contains(got, "done after 0.3s") || took < 300*time.Millisecond {
					t.Errorf("seconds 0.3: %q after %v", got, took)
				}
			})

			g.run("slow_compute cancelled", func(t *testing.T) {
				cs := e.connect(t, f, answerAll)
				ctx, cancel := context.WithCancel(t.Context())
				go cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 60, "label": "cancel-me"}})
				select {
				case <-f.started:
				case <-time.After(bound):
					t.Fatal("slow_compute did not start")
				}
				cancel()
				select {
				case ran := <-f.ran:
					t.Logf("slow_compute stopped %v after it started", ran)
				case <-time.After(bound):
					t.Fatalf("slow_compute still running %v after its call was cancelled", bound)
				}
			})

			g.run("failing_job", func(t *testing.T) {
				cs := e.connect(t, f, answerAll)
				res, took := call(t, cs, "failing_job", map[string]any{}, nil)
				if !res.IsError || !strings.Contains(textOf(t, res), "failed") || took < jobTime {
					t.Errorf("failing_job: isError %t, %q after %v; want a tool error after %v", res.IsError, textOf(t, res), took, jobTime)
				}
			})

			g.run("protocol_error_job", func(t *testing.T) {
				cs := e.connect(t, f, answerAll)
				start := time.Now()
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "protocol_error_job", Arguments: map[string]any{}})
				var werr *jsonrpc.Error
				if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError {
					t.Fatalf("protocol_error_job: result %v, error %v; want a JSON-RPC error %d", res, err, jsonrpc.CodeInternalError)
				}
				if took := time.Since(start); took < jobTime {
					t.Errorf("protocol_error_job failed after %v, want %v", took, jobTime)
				}
			})

			g.run("confirm_delete", func(t *testing.T) {
				args := map[string]any{"filename": "x.txt"}
				if !e.modern {
					et := &elicitTimes{}
					cs := e.connect(t, f, et.handle)
					et.start = time.Now()
					res, _ := call(t, cs, "confirm_delete", args, nil)
					if got := textOf(t, res); got != "Deleted x.txt." {
						t.Errorf("confirm_delete: %q", got)
					}
					if at := et.arrivals(); len(at) != 1 || at[0] < jobTime {
						t.Errorf("elicitations at %v, want one after %v", at, jobTime)
					}
					return
				}
				cs := e.connect(t, f, nil)
				res, took := call(t, cs, "confirm_delete", args, nil)
				needsInput(t, res, "confirm")
				if took < jobTime {
					t.Errorf("asked after %v, want after %v", took, jobTime)
				}
				res, took = call(t, cs, "confirm_delete", args, answers("confirm"))
				if got := textOf(t, res); got != "Deleted x.txt." || took > syncWindow {
					t.Errorf("with the answer: %q after %v", got, took)
				}
				res, _ = call(t, cs, "confirm_delete", args, mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "decline"}})
				if got := textOf(t, res); !strings.HasPrefix(got, "Kept x.txt") {
					t.Errorf("declined: %q", got)
				}
			})

			g.run("multi_input", func(t *testing.T) {
				if !e.modern {
					// Each elicitation is answered only once both are outstanding.
					var mu sync.Mutex
					var arrived []string
					both := make(chan struct{})
					cs := e.connect(t, f, func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						mu.Lock()
						arrived = append(arrived, req.Params.Message)
						if len(arrived) == 2 {
							close(both)
						}
						mu.Unlock()
						select {
						case <-both:
							return &mcp.ElicitResult{Action: "accept", Content: answerContent}, nil
						case <-time.After(bound):
							return nil, errors.New("the other elicitation never came")
						case <-ctx.Done():
							return nil, ctx.Err()
						}
					})
					start := time.Now()
					res, _ := call(t, cs, "multi_input", map[string]any{}, nil)
					if got := textOf(t, res); got != "multi_input: name=Alice (accept), confirm=true (accept)" {
						t.Errorf("multi_input: %q", got)
					}
					mu.Lock()
					defer mu.Unlock()
					if len(arrived) != 2 {
						t.Errorf("elicitations %q, want two", arrived)
					}
					if took := time.Since(start); took < jobTime {
						t.Errorf("answered after %v, want after %v", took, jobTime)
					}
					return
				}
				cs := e.connect(t, f, nil)
				res, took := call(t, cs, "multi_input", map[string]any{}, nil)
				needsInput(t, res, "confirm", "name")
				if took < jobTime {
					t.Errorf("asked after %v, want after %v", took, jobTime)
				}
				const want = "multi_input: name=Alice (accept), confirm=true (accept)"
				// Both answers in one retry (a gateway that holds the first).
				res, _ = call(t, cs, "multi_input", map[string]any{}, answers("name", "confirm"))
				if got := textOf(t, res); got != want {
					t.Errorf("multi_input: %q", got)
				}
				// One answer a retry (a gateway that passes each on): the other is asked at once, the
				// first kept in the requestState.
				res, took = call(t, cs, "multi_input", map[string]any{}, answers("name"))
				needsInput(t, res, "confirm")
				if took > syncWindow || res.RequestState == "" {
					t.Errorf("a partial answer was asked again after %v (want at once), requestState %q", took, res.RequestState)
				}
				res, _ = retry(t, cs, "multi_input", map[string]any{}, answers("confirm"), res.RequestState)
				if got := textOf(t, res); got != want {
					t.Errorf("multi_input after two retries: %q", got)
				}
				if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "multi_input", Arguments: map[string]any{},
					InputResponses: answers("confirm"), RequestState: "not-mine"}); err == nil {
					t.Error("a forged requestState was taken")
				}
			})

			g.run("test_tool_with_task", func(t *testing.T) {
				if !e.modern {
					et := &elicitTimes{}
					cs := e.connect(t, f, et.handle)
					et.start = time.Now()
					res, took := call(t, cs, "test_tool_with_task", map[string]any{}, nil)
					if got := textOf(t, res); !strings.Contains(got, "Alice") || took < finishTime {
						t.Errorf("test_tool_with_task: %q after %v, want Alice after %v", got, took, finishTime)
					}
					if at := et.arrivals(); len(at) != 1 || at[0] > syncWindow {
						t.Errorf("elicitations at %v, want one within %v", at, syncWindow)
					}
					return
				}
				cs := e.connect(t, f, nil)
				res, took := call(t, cs, "test_tool_with_task", map[string]any{}, nil)
				needsInput(t, res, "user_name")
				if took > syncWindow {
					t.Errorf("asked after %v, want within %v", took, syncWindow)
				}
				res, took = call(t, cs, "test_tool_with_task", map[string]any{}, answers("user_name"))
				if got := textOf(t, res); !strings.Contains(got, "Alice") || took < finishTime {
					t.Errorf("with the answer: %q after %v, want Alice after %v", got, took, finishTime)
				}
			})
		})
	}
}

func TestToolList(t *testing.T) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "taskfixture-test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"confirm_delete", "failing_job", "greet", "multi_input", "protocol_error_job", "slow_compute", "test_tool_with_task"}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

//lint:file-ignore SA1019 sampling, roots and logging are deprecated in 2026-07-28 but are legacy-era features the gateway must carry; the tests exercise them on purpose.

package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// upstreamTools are the tools every test server offers.
var upstreamTools = []string{"crash", "echo", "log", "progress", "roots", "sample", "slow", "whoami"}

type combo struct {
	kind upstreamKind
	mode routing.SessionMode
}

func (c combo) String() string { return string(c.kind) + "/" + modeName(c.mode) }

var allCombos = []combo{
	{kindStdio, routing.PerClient}, {kindStdio, routing.Shared},
	{kindHTTP, routing.PerClient}, {kindHTTP, routing.Shared},
}

// TestInteropCatalogAndRouting: initialize, a tools/list paginated by the gateway (page size 2 over the 16 tools
// of two upstreams: every tool exactly once, prefixed, no page larger than 2) and calls routed to the right
// upstream with the name translated back, for both upstream transports and both session modes.
func TestInteropCatalogAndRouting(t *testing.T) {
	for _, c := range allCombos {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			h := startGateway(t, routing.Options{PageSize: 2}, gateway.Options{},
				newUpstream(t, c.kind, "alpha", c.mode, md), newUpstream(t, c.kind, "beta", c.mode, md))
			cs := h.connect(t, "client", nil)
			if got := cs.InitializeResult().ProtocolVersion; got != legacyVersion {
				t.Errorf("negotiated %q, want %q", got, legacyVersion)
			}
			if cs.InitializeResult().Capabilities.Tools == nil {
				t.Errorf("the gateway does not advertise tools")
			}

			var names []string
			cursor, pages := "", 0
			for {
				res, err := cs.ListTools(ctxGuard(t), &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatalf("tools/list page %d: %v", pages, err)
				}
				pages++
				if len(res.Tools) > 2 {
					t.Errorf("page %d has %d tools, page size is 2", pages, len(res.Tools))
				}
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
				}
				if res.NextCursor == "" {
					break
				}
				if pages > 50 {
					t.Fatalf("pagination does not end")
				}
				cursor = res.NextCursor
			}
			var want []string
			for _, up := range []string{"alpha", "beta"} {
				for _, tool := range upstreamTools {
					want = append(want, up+"__"+tool)
				}
			}
			sort.Strings(want)
			got := slices.Clone(names)
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("catalog over %d pages:\n got %v\nwant %v", pages, got, want)
			}
			if pages != len(want)/2 {
				t.Errorf("%d pages, want %d", pages, len(want)/2)
			}

			for _, up := range []string{"alpha", "beta"} {
				if got := call(t, cs, up+"__whoami", map[string]any{}); got != up {
					t.Errorf("%s__whoami answered %q", up, got)
				}
				if got := call(t, cs, up+"__echo", map[string]any{"text": "hi " + up}); got != "hi "+up {
					t.Errorf("%s__echo answered %q", up, got)
				}
			}
		})
	}
}

// TestInteropDefaultVersionClient: the SDK client's default handshake tries the 2026-07-28 server/discover first;
// the gateway answers it, and the client then works statelessly.
func TestInteropDefaultVersionClient(t *testing.T) {
	md := markerSink(t)
	up, _ := httpUpstream(t, "alpha", routing.Shared, md)
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	cs := h.connectVersion(t, "default", nil, "")
	if v := cs.InitializeResult().ProtocolVersion; v != protocol.Modern {
		t.Errorf("negotiated %q, want %q", v, protocol.Modern)
	}
	if got := call(t, cs, "alpha__echo", map[string]any{"text": "x"}); got != "x" {
		t.Errorf("echo answered %q", got)
	}
}

// progressLog collects the progress notifications one client receives.
type progressLog struct {
	mu   sync.Mutex
	seen []mcp.ProgressNotificationParams
	ch   chan mcp.ProgressNotificationParams
}

func newProgressLog() *progressLog {
	return &progressLog{ch: make(chan mcp.ProgressNotificationParams, 256)}
}

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.seen = append(p.seen, *req.Params)
	p.mu.Unlock()
	select {
	case p.ch <- *req.Params:
	default:
	}
}

func (p *progressLog) snapshot() []mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// TestConcurrentClientsSameIDsAndProgressToken: two clients whose request ids collide (the SDK numbers from the
// same start) and who use the same progress token "p" call concurrently through a shared upstream (the calls
// meet inside the one upstream session, so both are in flight together) and through a per-client one. Each sees
// exactly its own progress, under its own token, and its own result.
func TestConcurrentClientsSameIDsAndProgressToken(t *testing.T) {
	for _, kind := range []upstreamKind{kindStdio, kindHTTP} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			h := startGateway(t, routing.Options{}, gateway.Options{},
				newUpstream(t, kind, "shared", routing.Shared, md), newUpstream(t, kind, "own", routing.PerClient, md))
			const steps = 3
			tags := []string{"A", "B"}
			logs := map[string]*progressLog{}
			sessions := map[string]*mcp.ClientSession{}
			for _, tag := range tags {
				logs[tag] = newProgressLog()
				sessions[tag] = h.connect(t, tag, &mcp.ClientOptions{ProgressNotificationHandler: logs[tag].handler})
			}
			results := map[string][]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, tag := range tags {
				wg.Go(func() {
					cs := sessions[tag]
					for _, tc := range []struct {
						tool string
						n    int
					}{{"shared__progress", 2}, {"own__progress", 1}} {
						p := &mcp.CallToolParams{Name: tc.tool, Arguments: progressIn{Tag: tag, Steps: steps, Group: "g-" + string(kind), N: tc.n}}
						p.SetProgressToken("p")
						res, err := cs.CallTool(ctxGuard(t), p)
						mu.Lock()
						if err != nil {
							results[tag] = append(results[tag], "error: "+err.Error())
						} else {
							results[tag] = append(results[tag], resultText(res))
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			for _, tag := range tags {
				want := []string{tag + " done", tag + " done"}
				if !slices.Equal(results[tag], want) {
					t.Errorf("client %s got results %q, want %q", tag, results[tag], want)
				}
				waitFor(t, "client "+tag+"'s progress", func() bool { return len(logs[tag].snapshot()) >= 2*steps })
				for _, p := range logs[tag].snapshot() {
					if p.ProgressToken != "p" {
						t.Errorf("client %s got progress token %v, want \"p\"", tag, p.ProgressToken)
					}
					if !strings.HasPrefix(p.Message, tag+" step ") {
						t.Errorf("client %s got someone else's progress: %q", tag, p.Message)
					}
				}
				if n := len(logs[tag].snapshot()); n != 2*steps {
					t.Errorf("client %s got %d progress notifications, want %d", tag, n, 2*steps)
				}
			}
		})
	}
}

// startSlow runs the slow tool in the background and waits until the upstream handler is running (its first
// progress notification arrived). It returns the call's cancel function and a channel with its outcome.
func startSlow(t *testing.T, cs *mcp.ClientSession, plog *progressLog, tool, tag string) (context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxGuard(t))
	errc := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: tool, Arguments: slowIn{Tag: tag}}
		p.SetProgressToken("tok-" + tag)
		res, err := cs.CallTool(ctx, p)
		if err == nil {
			err = fmt.Errorf("the call returned %q", resultText(res))
		}
		errc <- err
	}()
	gctx := ctxGuard(t)
	for {
		select {
		case p := <-plog.ch:
			if p.Message == tag+" started" {
				return cancel, errc
			}
		case err := <-errc:
			t.Fatalf("slow call ended before it started: %v", err)
		case <-gctx.Done():
			t.Fatalf("the slow call never started upstream")
		}
	}
}

// TestCancellation: a client cancels a call mid-flight (the SDK sends notifications/cancelled); the upstream's
// handler sees its context cancelled, and the session stays usable.
func TestCancellation(t *testing.T) {
	for _, c := range allCombos {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			h := startGateway(t, routing.Options{}, gateway.Options{}, newUpstream(t, c.kind, "alpha", c.mode, md))
			plog := newProgressLog()
			cs := h.connect(t, "client", &mcp.ClientOptions{ProgressNotificationHandler: plog.handler})
			tag := "cancel-" + strings.ReplaceAll(c.String(), "/", "-")
			cancel, errc := startSlow(t, cs, plog, "alpha__slow", tag)
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled call ended with %v", err)
			}
			waitMarker(t, md, "cancel-"+tag)
			if got := call(t, cs, "alpha__echo", map[string]any{"text": "after"}); got != "after" {
				t.Errorf("the call after the cancellation answered %q", got)
			}
		})
	}
}

// TestRequestTimeout: an upstream that never answers is cut off after RequestTimeout: the client gets -32001
// naming the upstream, the upstream is told to cancel, and the session stays usable.
func TestRequestTimeout(t *testing.T) {
	for _, c := range allCombos {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			up := newUpstream(t, c.kind, "alpha", c.mode, md)
			up.Timeout = 0
			h := startGateway(t, routing.Options{RequestTimeout: 1500 * time.Millisecond}, gateway.Options{}, up)
			cs := h.connect(t, "client", nil)
			// Warm up: a per-client upstream session starts on first use.
			if got := call(t, cs, "alpha__echo", map[string]any{"text": "warm"}); got != "warm" {
				t.Fatalf("warm-up answered %q", got)
			}
			tag := "timeout-" + strings.ReplaceAll(c.String(), "/", "-")
			_, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "alpha__slow", Arguments: slowIn{Tag: tag}})
			if err == nil {
				t.Fatalf("a call that never ends succeeded")
			}
			we := wireError(t, err)
			if we.Code != protocol.CodeRequestTimeout {
				t.Errorf("code %d, want %d (%s)", we.Code, protocol.CodeRequestTimeout, we.Message)
			}
			if !strings.Contains(we.Message, `"alpha"`) {
				t.Errorf("the error does not name the upstream: %q", we.Message)
			}
			waitMarker(t, md, "cancel-"+tag)
			if got := call(t, cs, "alpha__echo", map[string]any{"text": "after"}); got != "after" {
				t.Errorf("the call after the timeout answered %q", got)
			}
		})
	}
}

// TestUpstreamCrash: a stdio upstream that exits mid-call. The client gets an error naming the upstream, the
// session survives, and the next call is served by the restarted child. The reconnect backoff is long (2s) so
// that the next call deterministically arrives while the restart is still pending: the design wants the crash
// handled "transparently for the sessions that use it".
func TestUpstreamCrash(t *testing.T) {
	for _, mode := range []routing.SessionMode{routing.PerClient, routing.Shared} {
		t.Run(modeName(mode), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			up := stdioUpstream(t, "alpha", mode, md)
			up.Backoff = upstream.Backoff{Min: 2 * time.Second, Max: 2 * time.Second}
			h := startGateway(t, routing.Options{}, gateway.Options{}, up)
			cs := h.connect(t, "client", nil)
			if got := call(t, cs, "alpha__whoami", map[string]any{}); got != "alpha" {
				t.Fatalf("whoami answered %q", got)
			}
			_, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "alpha__crash", Arguments: map[string]any{}})
			if err == nil {
				t.Fatalf("the crash call succeeded")
			}
			if we := wireError(t, err); !strings.Contains(we.Message, `"alpha"`) {
				t.Errorf("the error does not name the upstream: %q", we.Message)
			}
			// The very next call.
			res, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "next"}})
			if err != nil {
				t.Errorf("the first call after the crash failed instead of waiting for the restart: %v", err)
			} else if got := resultText(res); got != "next" {
				t.Errorf("the first call after the crash answered %q", got)
			}
			// Whatever happened above, the restarted child must eventually serve the session.
			var last error
			waitFor(t, "a call served by the restarted child", func() bool {
				res, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "later"}})
				last = err
				return err == nil && resultText(res) == "later"
			})
			_ = last
		})
	}
}

// TestServerToClientRequests: sampling and roots requests of a per-client upstream reach the client whose call
// caused them, and the answers get back; a client that declared neither capability has its upstream's requests
// refused with -32601 by the gateway, and its call ends cleanly.
func TestServerToClientRequests(t *testing.T) {
	for _, kind := range []upstreamKind{kindStdio, kindHTTP} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			h := startGateway(t, routing.Options{}, gateway.Options{}, newUpstream(t, kind, "alpha", routing.PerClient, md))
			sampler := func(who string) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					prompt := ""
					if len(req.Params.Messages) > 0 {
						if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
							prompt = tc.Text
						}
					}
					return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: who + " answers " + prompt}}, nil
				}
			}
			clients := map[string]*mcp.ClientSession{}
			for _, who := range []string{"A", "B"} {
				clients[who] = h.connect(t, who, &mcp.ClientOptions{CreateMessageHandler: sampler(who)}, &mcp.Root{URI: "file:///" + who, Name: "root-" + who})
			}
			var wg sync.WaitGroup
			for who, cs := range clients {
				wg.Go(func() {
					res, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "alpha__sample", Arguments: tagIn{Tag: "q-" + who}})
					if err != nil {
						t.Errorf("client %s: sample: %v", who, err)
					} else if got, want := resultText(res), "sampled: "+who+" answers q-"+who; got != want {
						t.Errorf("client %s: sample answered %q, want %q", who, got, want)
					}
					res, err = cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "alpha__roots", Arguments: map[string]any{}})
					if err != nil {
						t.Errorf("client %s: roots: %v", who, err)
					} else if got, want := resultText(res), "roots: root-"+who; got != want {
						t.Errorf("client %s: roots answered %q, want %q", who, got, want)
					}
				})
			}
			wg.Wait()

			bare := h.connect(t, "bare", &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			for _, tool := range []string{"alpha__sample", "alpha__roots"} {
				got := call(t, bare, tool, tagIn{})
				if !strings.HasPrefix(got, "ERROR: ") || !strings.Contains(got, "code=-32601") {
					t.Errorf("%s for a client without the capability: upstream saw %q, want a -32601 error", tool, got)
				}
			}
			if got := call(t, bare, "alpha__echo", map[string]any{"text": "still"}); got != "still" {
				t.Errorf("echo after refused requests answered %q", got)
			}
		})
	}
}

package routing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// delayedUpstream answers every tools/call after delay (none: at once), off the connection's lock.
func delayedUpstream(tools string, delay time.Duration) *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if !m.MethodIs("tools/call") {
			defaultAnswer(c, m, fakeInitCaps, tools)
			return
		}
		answer := jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":"ok"}]}`))
		if delay <= 0 {
			c.sendLocked(answer)
			return
		}
		time.AfterFunc(delay, func() { // the upstream's fixed latency: the workload measured
			c.t.mu.Lock()
			defer c.t.mu.Unlock()
			c.sendLocked(answer)
		})
	})
}

// BenchmarkScriptCall is code mode's overhead through the gateway (issue 35, "Measured"): a direct tools/call
// against run_script making the same one call, both through HandleRequest to a fake upstream and back (the
// engine in process: BenchmarkOneCall of routing/codemode adds a sandbox worker's cost); and a script fanning
// out 50 calls to an upstream that takes 20ms each, reported as the run's time over one call's (x-slowest).
func BenchmarkScriptCall(b *testing.B) {
	const tools = `[{"name":"search","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]`
	mode := &codemode.Mode{Limits: codemode.Limits{MaxConcurrent: 64}}
	for _, tc := range []struct {
		name  string
		delay time.Duration
		req   string
	}{
		{"direct", 0, `{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"gh__search","arguments":{"q":"x"}}}`},
		{"script-one-call", 0, `{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"run_script","arguments":{"code":"return (await tools.gh__search({q: \"x\"}))[0].text"}}}`},
		{"script-fanout-50", 20 * time.Millisecond, `{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"run_script","arguments":{"code":"return (await Promise.all(Array.from({length: 50}, () => tools.gh__search({})))).length"}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := startRouter(b, Options{Shape: Shape{Root: &SearchMode{}, RootCode: mode}},
				UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: delayedUpstream(tools, tc.delay), Kind: "stdio"})
			s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125})
			m := mustParse(b, tc.req)
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				out := newStream(1, 16)
				s.HandleRequest(context.Background(), m, out)
				msg, final, ok := out.Next(r.ctx)
				if !ok || !final || strings.Contains(string(msg), `"isError":true`) || strings.Contains(string(msg), `"error"`) {
					b.Fatalf("answered %s", msg)
				}
				total += time.Since(start)
			}
			if tc.delay > 0 {
				b.ReportMetric(float64(total)/float64(b.N)/float64(tc.delay), "x-slowest")
			}
		})
	}
}

//lint:file-ignore SA1019 sampling, roots and logging are deprecated in 2026-07-28 but are legacy-era features the gateway must carry; the tests exercise them on purpose.

package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// TestSlowClientDoesNotStallOthers: a client opens its GET stream and never reads it while a shared upstream
// broadcasts megabytes of log notifications to every session. Another client of the same shared upstream still
// receives every log and completes its calls: a stalled client never blocks the upstream's reader (design §9).
func TestSlowClientDoesNotStallOthers(t *testing.T) {
	up, srv := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)

	const n, size = 300, 32 << 10 // ~9.6 MB, far beyond loopback socket buffers
	var logs atomic.Int64
	fast := h.connect(t, "fast", &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		if s, ok := req.Params.Data.(string); ok && strings.HasPrefix(s, "log ") {
			logs.Add(1)
		}
	}})
	if got := call(t, fast, "alpha__echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo answered %q", got)
	}

	stalled := h.raw(t)
	stalled.initialize("2025-11-25")
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, h.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", stalled.session)
	req.Header.Set("Mcp-Protocol-Version", stalled.version)
	resp, err := stalled.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: HTTP %d", resp.StatusCode)
	}
	// Never read resp.Body from here on.

	ss := srv.lastSession()
	if ss == nil {
		t.Fatal("no upstream session")
	}
	// Logs unrelated to any request, sent while no call is in flight: the gateway fans them out to every session.
	sent := make(chan error, 1)
	go func() { sent <- sendLogs(context.Background(), ss, n, size) }()
	if err := <-sent; err != nil {
		t.Fatalf("sending logs: %v", err)
	}
	waitFor(t, fmt.Sprintf("the fast client to receive %d logs", n), func() bool { return logs.Load() >= n })

	for i := range 20 {
		want := fmt.Sprintf("call %d", i)
		if got := call(t, fast, "alpha__echo", map[string]any{"text": want}); got != want {
			t.Fatalf("echo %d answered %q", i, got)
		}
	}
	// A second wave while the stalled client is still stalled.
	go func() { sent <- sendLogs(context.Background(), ss, n, size) }()
	if err := <-sent; err != nil {
		t.Fatalf("sending logs: %v", err)
	}
	waitFor(t, "the second wave of logs", func() bool { return logs.Load() >= 2*n })
	if got := call(t, fast, "alpha__echo", map[string]any{"text": "last"}); got != "last" {
		t.Fatalf("echo answered %q", got)
	}
}

// TestCancellationRaw: cancellation seen on the wire. The cancelled request's POST stream ends without a
// response; the upstream observes the cancel; its late answer (the test tool answers anyway) reaches nobody, not
// the POST stream and not the session's GET stream; and the request id is free for reuse at once.
func TestCancellationRaw(t *testing.T) {
	for _, kind := range []upstreamKind{kindStdio, kindHTTP} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			md := markerSink(t)
			h := startGateway(t, routing.Options{}, gateway.Options{}, newUpstream(t, kind, "alpha", routing.Shared, md))
			cl := h.raw(t)
			cl.initialize("2025-11-25")
			get := cl.open(http.MethodGet, "")
			tag := "raw-" + string(kind)
			post := cl.open(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"`+tag+`","late":true},"_meta":{"progressToken":"pt"}}}`)
			m, ok := post.next(t)
			if !ok {
				t.Fatal("the POST stream ended before any progress")
			}
			if p := decodeMsg(t, m); p.Method != "notifications/progress" || !bytes.Contains(p.Params, []byte(`"pt"`)) {
				t.Fatalf("first message on the POST stream: %s", m)
			}
			if r := cl.do(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`, nil); r.status != http.StatusAccepted {
				t.Fatalf("cancel: HTTP %d: %s", r.status, r.body)
			}
			for _, m := range post.rest(t) {
				t.Errorf("the cancelled request's stream carried %s", m)
			}
			waitMarker(t, md, "cancel-"+tag)

			r := cl.do(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"again"}}}`, nil)
			if r.status != http.StatusOK {
				t.Fatalf("reused id: HTTP %d: %s", r.status, r.body)
			}
			if f := r.final(t); string(f.ID) != "7" || f.Error != nil || !bytes.Contains(f.Result, []byte(`"again"`)) {
				t.Errorf("reused id 7 answered %s", r.body)
			}
			// End the session; its GET stream then ends, and must not have carried the late answer.
			dreq, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodDelete, h.url, nil)
			dreq.Header.Set("Mcp-Session-Id", cl.session)
			dreq.Header.Set("Mcp-Protocol-Version", cl.version)
			dresp, err := cl.hc.Do(dreq)
			if err != nil {
				t.Fatal(err)
			}
			dresp.Body.Close()
			for _, m := range get.rest(t) {
				if bytes.Contains(m, []byte("late ")) || decodeMsg(t, m).Method == "" {
					t.Errorf("the GET stream carried a response: %s", m)
				}
			}
		})
	}
}

package routing

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// rootedUpstream is a fake per-client upstream that works only in its client's roots, as server-filesystem does:
// it asks roots/list once initialized, and applies the answer apply after it came (resolving the roots on the
// disk); a call before then is refused.
func rootedUpstream(apply time.Duration) *fakeTransport {
	rooted := map[*fakeConn]bool{}
	var tr *fakeTransport
	tr = newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		switch {
		case m.Kind() == jsonrpc.KindNotification && m.MethodIs("notifications/initialized"):
			c.sendLocked([]byte(`{"jsonrpc":"2.0","id":"roots-1","method":"roots/list"}`))
		case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == `"roots-1"` && strings.Contains(string(m.Raw()), "file:///data"):
			time.AfterFunc(apply, func() {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				rooted[c] = true
				tr.eventLocked()
			})
		case m.MethodIs("tools/call"):
			text := "denied: outside allowed directories"
			if rooted[c] {
				text = "ok"
			}
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":"`+text+`"}]}`)))
		default:
			defaultAnswer(c, m, fakeInitCaps, `[{"name":"read","inputSchema":{"type":"object"}}]`)
		}
	})
	return tr
}

// TestWarmLinks (issue 31, item 8): when a client that declared roots says it is initialized, its own session of
// a per-client upstream known to ask for roots starts at once, without waiting for a first call, and has the
// client's roots before that call; a server that applies them a while after the answer (server-filesystem)
// still refuses nothing, even to a call sent the moment the roots are answered. A client without roots, or whose
// endpoint or policy shows none of the upstream's tools, starts nothing ahead of use.
func TestWarmLinks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		caps     string
		endpoint string
		allow    Allow
		warm     bool
	}{
		{name: "roots", caps: `{"roots":{}}`, warm: true},
		{name: "no roots", caps: `{"sampling":{}}`},
		{name: "outside the endpoint", caps: `{"roots":{}}`, endpoint: "other"},
		{name: "denied by policy", caps: `{"roots":{}}`, allow: func(up, kind, name string) bool { return kind != "tool" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := rootedUpstream(100 * time.Millisecond)
				r := startRouter(t, Options{Shape: Shape{Endpoints: []Endpoint{{Name: "other", Include: []string{"elsewhere__*"}}}}},
					UpstreamConfig{Name: "fs", Prefix: "fs__", Mode: PerClient, Transport: tr, Kind: "stdio"})
				up := r.upstream("fs")
				synctest.Wait()
				if !up.asksRoots.Load() {
					t.Fatal("the catalog's session of the upstream did not ask for roots: the test proves nothing")
				}
				s := r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(tc.caps), Endpoint: tc.endpoint, Allow: tc.allow})
				defer s.Close()
				s.HandleNotification(mustParse(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
				synctest.Wait()
				if got := s.links.peek(up) != nil; got != tc.warm {
					t.Fatalf("the client's own upstream session started on initialized: %v, want %v", got, tc.warm)
				}
				if !tc.warm {
					return
				}
				// The client answers roots/list; its first call goes out right behind the answer.
				msg, _, ok := s.Standalone().Next(r.ctx)
				m, err := jsonrpc.Parse(msg)
				if !ok || err != nil || !m.MethodIs("roots/list") {
					t.Fatalf("the client was sent %s, want roots/list", msg)
				}
				s.HandleResponse(mustParse(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"roots":[{"uri":"file:///data"}]}}`))
				out := r.NewStream(4, 0)
				s.HandleRequest(r.ctx, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__read","arguments":{}}}`), out)
				msg, _, ok = out.Next(r.ctx)
				if !ok || !strings.Contains(string(msg), `"ok"`) {
					t.Fatalf("the first call answered %s, want it to run once the upstream had applied the client's roots", msg)
				}
			})
		})
	}
}

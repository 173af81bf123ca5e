package routing

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// BenchmarkForwardedCall measures the allocations and time of one proxied tools/call through each feature that
// edits or decides on the forwarded request (issue 32: "allocations per proxied tools/call through presets,
// search and a per-user upstream each fall, and none rises"): a plain call, a call whose preset the gateway
// fills, call_tool on a search-mode endpoint, and a call to a per-user upstream the caller is connected to.
// Each round trip runs HandleRequest to the fake upstream and back to the client's stream.
func BenchmarkForwardedCall(b *testing.B) {
	const tools = `[{"name":"create_issue","inputSchema":{"type":"object"}},{"name":"search","inputSchema":{"type":"object"}}]`
	conn := newFakeConnector()
	conn.connect("alice", "me")
	r := startRouter(b, Options{
		Connector: conn,
		Shape: Shape{
			Overrides: map[OverrideKey]Override{
				{Upstream: "gh", Kind: "tool", Name: "create_issue"}: {Arguments: map[string]json.RawMessage{"owner": json.RawMessage(`"acme"`)}},
			},
			Endpoints: []Endpoint{{Name: "find", Include: []string{"gh__*"}, Search: &SearchMode{}}},
		},
	},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(tools), Kind: "stdio"},
		UpstreamConfig{Name: "me", Prefix: "me__", Mode: PerClient, Transport: echoingUpstream(`[{"name":"whoami","inputSchema":{"type":"object"}}]`), Kind: "http", UserGrants: &UserGrants{}})
	whole := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "alice"})
	// alice's first call, to the stand-in, opens her session of the per-user upstream, whose lists then replace
	// the stand-in (list_changed on her standalone stream).
	if ans := roundTrip(b, r, whole, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"me__connect","arguments":{}}}`); ans.Error() != nil {
		b.Fatalf("stand-in: %s", ans.Raw())
	}
	<-conn.saved
	for {
		msg, _, ok := whole.Standalone().Next(r.ctx)
		if !ok {
			b.Fatal("never heard list_changed")
		}
		if strings.Contains(string(msg), `"notifications/tools/list_changed"`) {
			break
		}
	}
	search := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "alice", Endpoint: "find"})
	for _, tc := range []struct {
		name string
		s    *Session
		msg  string
	}{
		{"plain", whole, `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"gh__search","arguments":{"q":"x"}}}`},
		{"preset", whole, `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"gh__create_issue","arguments":{"title":"t"}}}`},
		{"call_tool", search, `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"call_tool","arguments":{"name":"gh__search","arguments":{"q":"x"}}}}`},
		{"per-user", whole, `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"me__whoami","arguments":{}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := jsonrpc.Parse([]byte(tc.msg))
			if err != nil {
				b.Fatal(err)
			}
			call := func() {
				out := newStream(1, 8)
				tc.s.HandleRequest(context.Background(), m, out)
				ans, final, ok := out.Next(r.ctx)
				if !ok || !final {
					b.Fatalf("no final answer: %s", ans)
				}
				if !strings.Contains(string(ans), `"result"`) {
					b.Fatalf("answer %s", ans)
				}
			}
			call()
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}

package routing

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// TestConnectRetryState (issue 31, item 16): the gateway asks a 2026-07-28 client to connect a per-user upstream
// (here through its stand-in tool) with an input_required result that carries no requestState; a retry that accepts it but carries one, the
// upstream's-looking or the gateway's-looking, was not made from that answer, and is refused at once with -32602
// instead of being held for the person to connect until the upstream's timeout.
func TestConnectRetryState(t *testing.T) {
	for _, tc := range []struct{ name, state string }{
		{"a state of no gateway", `"bogus-state"`},
		{"a gateway-looking state", `"` + statePrefix + `AAAA.BBBB"`},
		{"not a string", `{"x":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ft := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
					defaultAnswer(c, m, fakeInitCaps, `[{"name":"whoami","inputSchema":{"type":"object"}}]`)
				})
				r := startRouter(t, Options{Connector: newFakeConnector()},
					UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: PerClient, Transport: ft, Kind: "http", UserGrants: &UserGrants{}, Timeout: time.Hour})
				carol := r.PooledSession(SessionParams{Principal: "iss|carol", Capabilities: json.RawMessage(`{"elicitation":{"url":{}}}`)})
				start := time.Now()
				m := roundTrip(t, r, carol, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gh__connect","arguments":{},"requestState":`+tc.state+`,"inputResponses":{"`+connectInputKey+`":{"action":"accept"}}}}`)
				if code, _ := m.ErrorCode(); code != protocol.CodeInvalidParams || !strings.Contains(string(m.Error()), "requestState") {
					t.Errorf("the retry answered %s, want -32602 about its requestState", m.Raw())
				}
				if waited := time.Since(start); waited != 0 {
					t.Errorf("the retry was held %v before its answer, want none", waited)
				}
			})
		})
	}
}

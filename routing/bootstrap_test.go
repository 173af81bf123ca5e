package routing

import "testing"

// TestRouterStartup starts a router over one fake upstream and makes one call. It lives in the file that sorts
// first so that, under -race, a data race in the start-up path is reported here rather than in whichever
// exchange test happens to start a router first (the race detector reports each race once per process).
//
// Regression test: Upstream.start used to assign `up.main = newLink(...)` after newLink had started the link's
// goroutine, which read up.main (Upstream.stateChanged, and `l != up.main` in Upstream.connected) unsynchronised.
// Besides the race report, a handshake that finished before the assignment made the main link pass for a
// per-client one: the catalog was never listed and the router never became ready (seen about 1 run in 10 under
// -race as "router not ready ... State:ready ... Tools:0").
func TestRouterStartup(t *testing.T) {
	ft := plainUpstream()
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
	if st := r.Status(); len(st) != 1 || st[0].State != "ready" || st[0].Tools != 1 {
		t.Fatalf("Status = %+v, want one ready upstream with one tool", st)
	}
	s := r.session(defaultClientCaps)
	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add","arguments":{}}}`)
	if string(m.Raw()) != `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` {
		t.Fatalf("answer %s", m.Raw())
	}
}

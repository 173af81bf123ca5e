package routing

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// fakeConnector is the per-user grants in memory: who is connected, the links made, the cached lists.
type fakeConnector struct {
	mu     sync.Mutex
	grants map[string]bool
	links  []fakeLink
	lists  map[string][]byte
	saved  chan struct{}
}

type fakeLink struct{ principal, upstream, session, elicitationID string }

func newFakeConnector() *fakeConnector {
	return &fakeConnector{grants: map[string]bool{}, lists: map[string][]byte{}, saved: make(chan struct{}, 16)}
}

func (f *fakeConnector) Connected(_ context.Context, principal, upstream string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.grants[principal+"|"+upstream], nil
}

func (f *fakeConnector) Link(_ context.Context, principal, upstream, session, elicitationID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links = append(f.links, fakeLink{principal, upstream, session, elicitationID})
	return "https://gw.example/connect/link-" + principal, nil
}

func (f *fakeConnector) SaveLists(_ context.Context, upstream string, lists []byte) error {
	f.mu.Lock()
	f.lists[upstream] = lists
	f.mu.Unlock()
	f.saved <- struct{}{}
	return nil
}

func (f *fakeConnector) LoadLists(_ context.Context, upstream string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists[upstream], nil
}

func (f *fakeConnector) connect(principal, upstream string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants[principal+"|"+upstream] = true
}

func (f *fakeConnector) lastLink() fakeLink {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.links[len(f.links)-1]
}

var _ Connector = (*fakeConnector)(nil)

// waitHeard waits until a stream carries a message with the method, and returns it.
func waitHeard(t *testing.T, r *testRouter, s *Stream, method string) []byte {
	t.Helper()
	for {
		msg, _, ok := s.Next(r.ctx)
		if !ok {
			t.Fatalf("never heard %s", method)
		}
		if strings.Contains(string(msg), `"`+method+`"`) {
			return msg
		}
	}
}

// TestUserGrants: a per-user upstream is never called for a principal without a grant. Before anyone connected
// the catalog shows only the stand-in; a 2025-11-25 client that declared elicitation.url gets -32042 with a URL
// elicitation bound to its session; GrantConnected notifies that session; once connected, the stand-in's call
// opens the person's session, whose lists are cached and replace the stand-in for everyone (list_changed); a
// client without URL elicitation gets the link as a tool error; a 2026-07-28 client gets input_required, and its
// accepted retry waits for the grant and reaches the upstream without the gateway's own inputResponses.
func TestUserGrants(t *testing.T) {
	conn := newFakeConnector()
	upstreamSaw := make(chan string, 16)
	ft := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs("tools/call") {
			upstreamSaw <- string(m.Params())
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":"hello"}]}`)))
			return
		}
		tools := `[{"name":"whoami","inputSchema":{"type":"object"}}]`
		if c.n == 2 { // bob's session: his grant allows more
			tools = `[{"name":"whoami","inputSchema":{"type":"object"}},{"name":"admin","inputSchema":{"type":"object"}}]`
		}
		defaultAnswer(c, m, fakeInitCaps, tools)
	})
	r := startRouter(t, Options{Connector: conn},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: PerClient, Transport: ft, Kind: "http", UserGrants: &UserGrants{}})
	if st := r.Status()[0]; st.State != "per-user" || st.Tools != 1 {
		t.Errorf("status before anyone connected: %+v", st)
	}

	urlCaps := json.RawMessage(`{"elicitation":{"form":{},"url":{}}}`)
	alice := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "iss|alice", Capabilities: urlCaps})
	if got := names(listAll(t, r, alice)); !slices.Equal(got, []string{"gh__connect"}) {
		t.Fatalf("tools before anyone connected: %v", got)
	}
	m := roundTrip(t, r, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gh__connect","arguments":{}}}`)
	var e struct {
		Code int
		Data struct {
			Elicitations []struct{ Mode, ElicitationID, URL, Message string }
		}
	}
	if m.Error() == nil || json.Unmarshal(m.Error(), &e) != nil || e.Code != protocol.CodeURLElicitationRequired || len(e.Data.Elicitations) != 1 {
		t.Fatalf("call without a grant: %s", m.Raw())
	}
	el, link := e.Data.Elicitations[0], conn.lastLink()
	if el.Mode != "url" || el.URL != "https://gw.example/connect/link-iss|alice" || el.ElicitationID == "" || el.Message == "" {
		t.Errorf("elicitation %+v", el)
	}
	if link != (fakeLink{"iss|alice", "gh", alice.ID(), el.ElicitationID}) {
		t.Errorf("link made for %+v", link)
	}
	ft.mu.Lock()
	connects := ft.connects
	ft.mu.Unlock()
	if connects != 0 {
		t.Errorf("the upstream was connected to %d times without a grant", connects)
	}

	conn.connect("iss|alice", "gh")
	r.GrantConnected(context.Background(), "iss|alice", "gh", alice.ID(), el.ElicitationID)
	if msg := waitHeard(t, r, alice.Standalone(), "notifications/elicitation/complete"); !strings.Contains(string(msg), el.ElicitationID) {
		t.Errorf("completion %s", msg)
	}

	// The completion opens alice's session of the upstream, which lists it for everyone.
	<-conn.saved
	waitHeard(t, r, alice.Standalone(), "notifications/tools/list_changed")
	if got := names(listAll(t, r, alice)); !slices.Equal(got, []string{"gh__whoami"}) {
		t.Fatalf("tools once alice connected: %v", got)
	}
	// The stand-in is gone with it, but the client's retry of its call is told it is connected.
	m = roundTrip(t, r, alice, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gh__connect","arguments":{}}}`)
	if m.Error() != nil || !strings.Contains(string(m.Result()), "is connected") {
		t.Errorf("the stand-in retried after the real list arrived: %s", m.Raw())
	}
	if m := roundTrip(t, r, alice, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gh__whoami","arguments":{}}}`); m.Error() != nil {
		t.Fatalf("alice's call: %s", m.Raw())
	}
	<-upstreamSaw

	bob := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "iss|bob", Capabilities: json.RawMessage(`{}`)})
	// The shared catalog reloads the cached lists in the background: bob hears list_changed if he listed first.
	for got := names(listAll(t, r, bob)); !slices.Equal(got, []string{"gh__whoami"}); got = names(listAll(t, r, bob)) {
		if !slices.Equal(got, []string{"gh__connect"}) {
			t.Fatalf("bob sees %v, want the cached list", got)
		}
		waitHeard(t, r, bob.Standalone(), "notifications/tools/list_changed")
	}
	m = roundTrip(t, r, bob, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"gh__whoami","arguments":{}}}`)
	if m.Error() != nil || !strings.Contains(string(m.Result()), `"isError":true`) || !strings.Contains(string(m.Result()), "https://gw.example/connect/link-iss|bob") {
		t.Fatalf("bob without URL elicitation: %s", m.Raw())
	}
	if l := conn.lastLink(); l.session != "" || l.elicitationID != "" {
		t.Errorf("a link for a client that hears no completion names its session: %+v", l)
	}
	m = roundTrip(t, r, bob, `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"gh://x"}}`)
	if m.Error() == nil {
		t.Errorf("bob's read without a grant: %s", m.Raw())
	}

	// Per-person lists: bob's grant shows him one more tool than alice's shows her. Each sees and calls their own.
	conn.connect("iss|bob", "gh")
	if m := roundTrip(t, r, bob, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"gh__whoami","arguments":{}}}`); m.Error() != nil {
		t.Fatalf("bob's call once connected: %s", m.Raw())
	}
	<-upstreamSaw
	<-conn.saved // bob's list is the shared cache now
	waitHeard(t, r, bob.Standalone(), "notifications/tools/list_changed")
	waitHeard(t, r, alice.Standalone(), "notifications/tools/list_changed")
	if got := names(listAll(t, r, bob)); !slices.Equal(got, []string{"gh__whoami", "gh__admin"}) {
		t.Errorf("bob's own tools: %v", got)
	}
	if got := names(listAll(t, r, alice)); !slices.Equal(got, []string{"gh__whoami"}) {
		t.Errorf("alice's own tools, once bob's list is the shared one: %v", got)
	}
	if m := roundTrip(t, r, alice, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"gh__admin","arguments":{}}}`); m.Error() == nil {
		t.Errorf("alice called a tool her grant does not list: %s", m.Raw())
	}
	if m := roundTrip(t, r, bob, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"gh__admin","arguments":{}}}`); m.Error() != nil {
		t.Errorf("bob's own tool: %s", m.Raw())
	}
	<-upstreamSaw
	if got := names(listAll(t, r, r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "iss|alice"}))); !slices.Equal(got, []string{"gh__whoami"}) {
		t.Errorf("alice's new session: %v", got)
	}

	carol := r.PooledSession(SessionParams{Principal: "iss|carol", Capabilities: urlCaps})
	m = roundTrip(t, r, carol, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"gh__whoami","arguments":{"x":1}}}`)
	var ir struct {
		ResultType    string
		InputRequests map[string]struct {
			Method string
			Params struct{ Mode, URL string }
		}
	}
	if json.Unmarshal(m.Result(), &ir) != nil || ir.ResultType != "input_required" || ir.InputRequests[connectInputKey].Params.Mode != "url" ||
		!strings.HasSuffix(ir.InputRequests[connectInputKey].Params.URL, "link-iss|carol") {
		t.Fatalf("a 2026-07-28 client without a grant: %s", m.Raw())
	}
	retry := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gh__whoami","arguments":{"x":1},"inputResponses":{"` + connectInputKey + `":{"action":"accept"}}}}`
	done := make(chan jsonrpc.Message, 1)
	go func() { done <- roundTrip(t, r, carol, retry) }()
	conn.connect("iss|carol", "gh")
	r.GrantConnected(context.Background(), "iss|carol", "gh", "", "")
	m = <-done
	if m.Error() != nil || strings.Contains(string(m.Result()), "input_required") {
		t.Fatalf("the accepted retry once connected: %s", m.Raw())
	}
	if saw := <-upstreamSaw; strings.Contains(saw, "inputResponses") || !strings.Contains(saw, `"x":1`) {
		t.Errorf("the upstream saw %s", saw)
	}
	m = roundTrip(t, r, carol, strings.Replace(retry, "accept", "decline", 1))
	if m.Error() != nil {
		t.Errorf("a declined retry once connected goes through: %s", m.Raw())
	}
	<-upstreamSaw

	dave := r.PooledSession(SessionParams{Principal: "iss|dave", Capabilities: urlCaps})
	m = roundTrip(t, r, dave, strings.Replace(retry, "accept", "decline", 1))
	if !strings.Contains(string(m.Result()), `"isError":true`) || !strings.Contains(string(m.Result()), "declined") {
		t.Errorf("a declined connect: %s", m.Raw())
	}
}

// TestStandInRelistsLiveLink (issue 33): a person whose upstream session is up already (it met the 401 that asked
// them to connect again, after an authorization server moved) and who calls the stand-in again gets their tools
// listed anew: a new session lists as it connects, a live one did not, and the upstream's new tools never showed.
func TestStandInRelistsLiveLink(t *testing.T) {
	conn := newFakeConnector()
	var mu sync.Mutex
	tools := `[{"name":"whoami","inputSchema":{"type":"object"}}]`
	ft := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		mu.Lock()
		defer mu.Unlock()
		defaultAnswer(c, m, fakeInitCaps, tools)
	})
	r := startRouter(t, Options{Connector: conn},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: PerClient, Transport: ft, Kind: "http", UserGrants: &UserGrants{}})
	alice := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "iss|alice", Capabilities: json.RawMessage(`{}`)})
	conn.connect("iss|alice", "gh")
	callStandIn := func() {
		t.Helper()
		if m := roundTrip(t, r, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gh__connect","arguments":{}}}`); m.Error() != nil || !strings.Contains(string(m.Result()), "is connected") {
			t.Fatalf("the stand-in answered %s", m.Raw())
		}
		select {
		case <-conn.saved:
		case <-r.ctx.Done():
			t.Fatal("the person's lists were not listed again")
		}
		waitHeard(t, r, alice.Standalone(), "notifications/tools/list_changed")
	}
	callStandIn()
	if got := names(listAll(t, r, alice)); !slices.Equal(got, []string{"gh__whoami"}) {
		t.Fatalf("alice's tools once connected: %v", got)
	}
	mu.Lock()
	tools = `[{"name":"whoami","inputSchema":{"type":"object"}},{"name":"issues","inputSchema":{"type":"object"}}]`
	mu.Unlock()
	callStandIn() // her session is up: the stand-in's retry lists it again
	if got := names(listAll(t, r, alice)); !slices.Equal(got, []string{"gh__whoami", "gh__issues"}) {
		t.Errorf("alice's tools after connecting again: %v", got)
	}
}

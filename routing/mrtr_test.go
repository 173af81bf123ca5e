package routing

// The 2026-07-28 machinery of mrtr.go and modern.go in isolation: the gateway's requestState tokens, the pool
// of stateless sessions, adaptMeta, and a parked call's rounds over the in-memory fake upstream.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// stateRouter is the least of a Router that mints and checks requestStates: the key, and one park in round 2.
func stateRouter(key string) (*Router, *park) {
	r := &Router{cursors: cursorCodec{key: []byte(key)}, parkTable: parkTable{stateAEAD: newStateAEAD([]byte(key)), ownState: statePrefix + stateKeyID([]byte(key)) + "."}}
	p := &park{id: "0123456789abcdef01234567", round: 2}
	r.parkTable.byID = map[string]*park{p.id: p}
	return r, p
}

// alterPayload seals a token's payload again with edit applied to its fields, keeping the old tag: what a forger
// who could read the payload would try.
func alterPayload(t *testing.T, r *Router, tok string, edit func(parts []string)) string {
	t.Helper()
	parts, ok := r.openState(tok)
	if !ok {
		t.Fatalf("token %q does not open", tok)
	}
	parts[4] = base64.RawURLEncoding.EncodeToString([]byte(parts[4]))
	edit(parts)
	body, _ := r.sealState([]byte(strings.Join(parts, ".")))
	_, tag, _ := strings.Cut(strings.TrimPrefix(tok, r.ownState), ".")
	return r.ownState + base64.RawURLEncoding.EncodeToString(body) + "." + tag
}

// flipLast changes the last character of s (a base64url MAC: every bit of its last character counts).
func flipLast(s string) string {
	if strings.HasSuffix(s, "A") {
		return s[:len(s)-1] + "B"
	}
	return s[:len(s)-1] + "A"
}

// TestRequestStateToken: a requestState the gateway minted names its park only when presented intact, by the
// principal it was issued to, for the same method and name, before it expires, in the park's current round and
// to a gateway holding the same key. Forgeries and misuse get the generic "not valid" error (which says nothing
// of what was wrong); expiry, a past round and a forgotten park get errors that tell the client to start over.
func TestRequestStateToken(t *testing.T) {
	r, p := stateRouter("state-test-key")
	bind := bindHash("alice", "tools/call", "fake__ask")
	valid := r.stateToken(p.id, 2, bind, time.Now().Add(time.Minute))
	if !isGatewayState(valid) || isGatewayState("upstream-state") || isGatewayState("") {
		t.Fatalf("IsGatewayState does not tell the gateway's tokens (%q) from others", valid)
	}
	other, _ := stateRouter("another-key")
	// A Switchboard chained in front of another must pass the inner one's states through, and still refuse its
	// own altered ones: the key's id in the prefix tells them apart.
	if !r.OwnsState(valid) || other.OwnsState(valid) || r.OwnsState(flipLast(other.stateToken(p.id, 2, bind, time.Now().Add(time.Minute)))) || !r.OwnsState(flipLast(valid)) {
		t.Fatalf("OwnsState does not tell this key's states (%q) from another gateway's", valid)
	}
	unknown := r.stateToken("ffffffffffffffffffffffff", 2, bind, time.Now().Add(time.Minute))

	for _, tc := range []struct {
		name  string
		tok   string
		bind  string
		wantP bool   // the park is found
		want  string // else a part of the error
	}{
		{name: "intact", tok: valid, bind: bind, wantP: true},
		{name: "MAC altered", tok: flipLast(valid), bind: bind, want: "not valid"},
		{name: "MAC cut", tok: valid[:len(valid)-4], bind: bind, want: "not valid"},
		{name: "no MAC", tok: statePrefix + "abc", bind: bind, want: "not valid"},
		{name: "payload not base64", tok: statePrefix + "!!!." + "abc", bind: bind, want: "not valid"},
		{name: "round altered", tok: alterPayload(t, r, valid, func(p []string) { p[1] = "3" }), bind: bind, want: "not valid"},
		{name: "expiry extended", tok: alterPayload(t, r, valid, func(p []string) { p[2] += "0" }), bind: bind, want: "not valid"},
		{name: "binding swapped", tok: alterPayload(t, r, valid, func(p []string) { p[3] = bindHash("mallory", "tools/call", "fake__ask") }), bind: bindHash("mallory", "tools/call", "fake__ask"), want: "not valid"},
		{name: "minted with another key", tok: other.stateToken(p.id, 2, bind, time.Now().Add(time.Minute)), bind: bind, want: "not valid"},
		{name: "another principal", tok: valid, bind: bindHash("mallory", "tools/call", "fake__ask"), want: "not valid"},
		{name: "another method", tok: valid, bind: bindHash("alice", "prompts/get", "fake__ask"), want: "not valid"},
		{name: "another name", tok: valid, bind: bindHash("alice", "tools/call", "fake__other"), want: "not valid"},
		{name: "expired", tok: r.stateToken(p.id, 2, bind, time.Now().Add(-time.Second)), bind: bind, want: "expired"},
		{name: "earlier round", tok: r.stateToken(p.id, 1, bind, time.Now().Add(time.Minute)), bind: bind, want: "earlier round"},
		{name: "park forgotten", tok: unknown, bind: bind, want: "no longer holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.parkTable.find(tc.tok, tc.bind)
			if tc.wantP {
				if err != nil || got != p {
					t.Fatalf("find = %v, %v; want the park", got, err)
				}
				return
			}
			if err == nil || got != nil {
				t.Fatalf("find = %v, %v; want an error mentioning %q", got, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestStatelessPoolKey: 2026-07-28 requests share a stateless session when they carry the same principal, the
// same capabilities (as JSON values: key order and spacing do not matter; what is not an object counts as {})
// and the same log level (an invalid one counts as none); any difference gets a session of its own.
func TestStatelessPoolKey(t *testing.T) {
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: PerClient, Transport: plainUpstream(), Kind: "stdio"})
	caps := `{"sampling":{},"elicitation":{"form":{},"url":{}}}`
	for _, tc := range []struct {
		name string
		a, b SessionParams
		same bool
	}{
		{"identical", SessionParams{Principal: "alice", Capabilities: json.RawMessage(caps)}, SessionParams{Principal: "alice", Capabilities: json.RawMessage(caps)}, true},
		{"key order and spacing", SessionParams{Principal: "alice", Capabilities: json.RawMessage(caps)},
			SessionParams{Principal: "alice", Capabilities: json.RawMessage(" {\n \"elicitation\": {\"url\": {}, \"form\": {}},\t\"sampling\": {} }")}, true},
		{"no capabilities is {}", SessionParams{Principal: "alice"}, SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{}`)}, true},
		{"not an object is {}", SessionParams{Principal: "alice", Capabilities: json.RawMessage(`[1]`)}, SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{ }`)}, true},
		{"same level", SessionParams{Principal: "alice", LogLevel: "info"}, SessionParams{Principal: "alice", LogLevel: "info"}, true},
		{"invalid level is none", SessionParams{Principal: "alice", LogLevel: "loud"}, SessionParams{Principal: "alice"}, true},
		{"another level", SessionParams{Principal: "alice", LogLevel: "debug"}, SessionParams{Principal: "alice"}, false},
		{"two levels", SessionParams{Principal: "alice", LogLevel: "debug"}, SessionParams{Principal: "alice", LogLevel: "error"}, false},
		{"another principal", SessionParams{Principal: "alice", Capabilities: json.RawMessage(caps)}, SessionParams{Principal: "bob", Capabilities: json.RawMessage(caps)}, false},
		{"other capabilities", SessionParams{Principal: "alice", Capabilities: json.RawMessage(caps)}, SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"sampling":{}}`)}, false},
		{"nested value differs", SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"roots":{"listChanged":true}}`)},
			SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"roots":{"listChanged":false}}`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := r.PooledSession(tc.a), r.PooledSession(tc.b)
			if (a == b) != tc.same {
				t.Errorf("same session = %v, want %v (keys %q and %q)", a == b, tc.same, a.era.(*pooledClient).key, b.era.(*pooledClient).key)
			}
			if !a.Modern() || a.ProtocolVersion() != protocol.LatestLegacy {
				t.Errorf("pooled session: stateless %v, version %q; want a stateless session speaking %s upstream", a.Modern(), a.ProtocolVersion(), protocol.LatestLegacy)
			}
		})
	}
	// A closed session leaves the pool: the next request with its key gets a new one.
	p := SessionParams{Principal: "carol"}
	s := r.PooledSession(p)
	s.Close()
	if r.PooledSession(p) == s {
		t.Errorf("a closed stateless session is still served from the pool")
	}
}

// TestStatelessPoolBounds: one principal inventing capability objects holds at most maxStatelessPerPrincipal
// pooled sessions, evicting its own least recently used idle one and never another principal's; the pool's key is
// a hash, not a copy of the capabilities.
func TestStatelessPoolBounds(t *testing.T) {
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: PerClient, Transport: plainUpstream(), Kind: "stdio"})
	bob := r.PooledSession(SessionParams{Principal: "bob"})
	big := strings.Repeat("x", 8<<10)
	var first *Session
	for i := range 3 * maxStatelessPerPrincipal {
		s := r.PooledSession(SessionParams{Principal: "mallory", Capabilities: json.RawMessage(fmt.Sprintf(`{"experimental":{"n%d":%q}}`, i, big))})
		if i == 0 {
			first = s
		}
		if len(s.era.(*pooledClient).key) != 32 {
			t.Fatalf("pool key of %d bytes, want a 32-byte hash", len(s.era.(*pooledClient).key))
		}
	}
	r.modernPool.mu.Lock()
	mallory, total := 0, len(r.modernPool.m)
	for _, s := range r.modernPool.m {
		if s.params.Principal == "mallory" {
			mallory++
		}
	}
	_, bobPooled := r.modernPool.m[bob.era.(*pooledClient).key]
	_, firstPooled := r.modernPool.m[first.era.(*pooledClient).key]
	r.modernPool.mu.Unlock()
	if mallory != maxStatelessPerPrincipal || total != maxStatelessPerPrincipal+1 {
		t.Errorf("pool holds %d of mallory's sessions (%d in all), want %d (+1 of bob's)", mallory, total, maxStatelessPerPrincipal)
	}
	if !bobPooled || r.PooledSession(SessionParams{Principal: "bob"}) != bob {
		t.Error("another principal's flood evicted bob's idle session")
	}
	if firstPooled {
		t.Error("mallory's least recently used session is still pooled")
	}
}

// TestAdaptMeta: a request's _meta speaks the era of the upstream session it goes to. Toward a legacy one the
// 2026-07-28 keys go (it learnt all that in initialize) and everything else stays; an emptied _meta goes too.
// Toward a stateless one the version is set, and the session's capabilities, client info and level are added
// where the request has none of its own.
func TestAdaptMeta(t *testing.T) {
	s := &Session{params: SessionParams{Capabilities: json.RawMessage(`{"sampling":{}}`), ClientInfo: json.RawMessage(`{"name":"c","version":"1"}`)}, logLevel: levelIndex("warning")}
	legacy := &link{conn: &upstream.Conn{Server: upstream.ServerHello{ProtocolVersion: "2025-11-25"}}}
	modern := &link{conn: &upstream.Conn{Server: upstream.ServerHello{ProtocolVersion: protocol.Modern}}}
	eraMeta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"x"},"io.modelcontextprotocol/logLevel":"debug"`
	for _, tc := range []struct {
		name   string
		l      *link // the upstream session the request goes to
		params string
		want   string // the params sent
	}{
		{"legacy: era keys go, others stay", legacy, `{"name":"t","_meta":{"progressToken":7,` + eraMeta + `}}`, `{"name":"t","_meta":{"progressToken":7}}`},
		{"legacy: an emptied _meta goes", legacy, `{"name":"t","_meta":{` + eraMeta + `}}`, `{"name":"t"}`},
		{"legacy: nothing to do", legacy, `{"name":"t"}`, `{"name":"t"}`},
		{"stateless: the session's values fill in", modern, `{"name":"t","_meta":{"progressToken":"p"}}`,
			`{"name":"t","_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"warning"}}`},
		{"stateless: the request's own values win", modern, `{"_meta":{` + eraMeta + `}}`, `{"_meta":{` + eraMeta + `}}`},
		{"stateless: another version is replaced", modern, `{"_meta":{"io.modelcontextprotocol/logLevel":"debug", "io.modelcontextprotocol/protocolVersion" : "2025-11-25" }}`,
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"debug"}}`},
		{"stateless: an empty _meta with spaces", modern, `{"_meta":{ }}`,
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"warning"}}`},
		{"stateless: no params", modern, ``,
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"warning"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m jsonrpc.Message
			if tc.params == "" {
				m = mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`)
			} else {
				m = mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":`+tc.params+`}`)
			}
			got := adaptMeta(s, tc.l, m)
			if string(got.ID()) != "3" || got.Method() != "tools/call" {
				t.Errorf("adaptMeta changed the request: %s", got.Raw())
			}
			if !sameJSON(got.Params(), []byte(tc.want)) {
				t.Errorf("params\n got %s\nwant %s", got.Params(), tc.want)
			}
		})
	}
}

// sameJSON reports whether two JSON texts encode the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return string(ca) == string(cb)
}

// askUpstream is a legacy fake upstream whose tool "ask" asks the client for a name (elicitation/create "up-e1",
// on the call's stream) and answers the call with the name it gets; or, when the test calls finish, at once
// without it.
type askUpstream struct {
	ft     *fakeTransport
	conn   *fakeConn // where the call arrived
	callID []byte    // the call's upstream id
	// progress, set before the first call, makes the upstream report progress on the call (under the token it
	// was given, the gateway's) before it answers.
	progress bool
}

func newAskUpstream() *askUpstream {
	a := &askUpstream{}
	a.ft = newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		switch {
		case m.Kind() == jsonrpc.KindRequest && m.MethodIs("tools/call"):
			a.conn, a.callID = c, append([]byte(nil), m.ID()...)
			c.sendRelatedLocked([]byte(`{"jsonrpc":"2.0","id":"up-e1","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`), m.ID())
		case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == `"up-e1"` && m.Result() != nil:
			if a.progress {
				c.sendRelatedLocked(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1}}`, a.callID), a.callID)
			}
			name, _ := jsonrpc.LookupString(m.Result(), "content", "name")
			c.sendLocked(jsonrpc.AppendResult(nil, a.callID, []byte(`{"content":[{"type":"text","text":`+string(jsonrpc.AppendQuote(nil, name))+`}]}`)))
		default:
			defaultAnswer(c, m, fakeInitCaps, `[{"name":"ask","inputSchema":{"type":"object"}}]`)
		}
	})
	return a
}

// finish makes the upstream answer its call without waiting for the elicitation's answer.
func (a *askUpstream) finish() {
	a.ft.mu.Lock()
	defer a.ft.mu.Unlock()
	a.conn.sendLocked(jsonrpc.AppendResult(nil, a.callID, []byte(`{"content":[{"type":"text","text":"finished without you"}]}`)))
}

// answered returns the first response the gateway wrote to the upstream for its request id, or the zero Message;
// a.ft.mu is held.
func (a *askUpstream) answered(id string) jsonrpc.Message {
	for _, rec := range a.ft.log {
		if rec.msg.Kind() == jsonrpc.KindResponse && string(rec.msg.ID()) == id {
			return rec.msg
		}
	}
	return jsonrpc.Message{}
}

// askCall is a tools/call of fake__ask, a retry when state is set.
func askCall(id, state, responses string) string {
	if state == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"fake__ask","arguments":{}}}`, id)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"fake__ask","arguments":{},"inputResponses":%s,"requestState":%q}}`, id, responses, state)
}

// inputRequired checks that a final answer is an InputRequiredResult with exactly one request, and returns its
// key, the request, and the requestState.
func inputRequired(t *testing.T, m jsonrpc.Message) (string, json.RawMessage, string) {
	t.Helper()
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(m.Result(), &res); err != nil || res.ResultType != "input_required" || len(res.InputRequests) != 1 || !isGatewayState(res.RequestState) {
		t.Fatalf("answer %s, want an input_required result with one request and the gateway's requestState", m.Raw())
	}
	for k, v := range res.InputRequests {
		return k, v, res.RequestState
	}
	return "", nil, ""
}

// startAsk runs a router over an askUpstream (one upstream session per client) and returns the stateless session
// of a client that declared elicitation.
func startAsk(t *testing.T) (*testRouter, *askUpstream, *Session) {
	t.Helper()
	a := newAskUpstream()
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: PerClient, Transport: a.ft, Kind: "stdio"})
	return r, a, r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
}

// TestParkedCallResumes: a legacy upstream's elicitation during a stateless session's call becomes the call's
// InputRequiredResult (the upstream's request under a key of the gateway's, with its method and params); the
// retry's inputResponses reach the upstream as the answer to its own request id, and the retry gets the
// upstream's final result under the retry's id.
func TestParkedCallResumes(t *testing.T) {
	r, a, s := startAsk(t)
	first, err := ask(r.ctx, s, askCall("c1", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	key, req, state := inputRequired(t, first)
	if string(first.ID()) != `"c1"` || !sameJSON(req, []byte(`{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`)) {
		t.Fatalf("first answer %s, want the upstream's elicitation under id c1", first.Raw())
	}
	final, err := ask(r.ctx, s, askCall("c2", state, `{"`+key+`":{"action":"accept","content":{"name":"Ada"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"c2","result":{"content":[{"type":"text","text":"Ada"}]}}`; string(final.Raw()) != want {
		t.Errorf("retry answered %s, want %s", final.Raw(), want)
	}
	a.ft.mu.Lock()
	got := a.answered(`"up-e1"`)
	a.ft.mu.Unlock()
	if !sameJSON(got.Result(), []byte(`{"action":"accept","content":{"name":"Ada"}}`)) {
		t.Errorf("the upstream's elicitation was answered %s, want the client's inputResponse", got.Raw())
	}
}

// TestParkedCallFinishesFirst: an upstream that ends its call while the call is parked (it gave up waiting for
// the client's input) has its open request refused by the gateway, and the client's retry gets the call's
// final result rather than an error that would make it run the tool again.
//
// Regression test: park.finished used to forget the park at once, so the retry got -32602 "names a call this
// gateway no longer holds" and the buffered answer was lost.
func TestParkedCallFinishesFirst(t *testing.T) {
	r, a, s := startAsk(t)
	first, err := ask(r.ctx, s, askCall("c1", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	key, _, state := inputRequired(t, first)
	a.finish()
	a.ft.waitFor(r.ctx, t, "the gateway to refuse the open elicitation", func() bool { return a.answered(`"up-e1"`).Error() != nil })
	final, err := ask(r.ctx, s, askCall("c2", state, `{"`+key+`":{"action":"accept","content":{"name":"Ada"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"c2","result":{"content":[{"type":"text","text":"finished without you"}]}}`; string(final.Raw()) != want {
		t.Errorf("retry answered %s, want %s", final.Raw(), want)
	}
}

// TestParkedCallSurvivesPoolPressure: when the pool of stateless sessions is full, the session evicted to make
// room is never one whose call is parked waiting for its client's input: the retry still resumes it.
//
// Regression test: the eviction looked only at InFlight, which does not count parked calls, and closed the
// least recently used session, parked call and all.
func TestParkedCallSurvivesPoolPressure(t *testing.T) {
	r, _, s := startAsk(t)
	first, err := ask(r.ctx, s, askCall("c1", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	key, _, state := inputRequired(t, first)
	for i := range maxStatelessSessions {
		r.PooledSession(SessionParams{Principal: fmt.Sprintf("other-%d", i)})
	}
	// The retry comes through the pool, as the front end's does.
	s2 := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
	if s2 != s {
		t.Fatalf("the session holding a parked call was evicted from the pool")
	}
	final, err := ask(r.ctx, s2, askCall("c2", state, `{"`+key+`":{"action":"accept","content":{"name":"Ada"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"c2","result":{"content":[{"type":"text","text":"Ada"}]}}`; string(final.Raw()) != want {
		t.Errorf("retry answered %s, want %s", final.Raw(), want)
	}
}

// TestParkedRetryLeavesNothingInFlight: a retry that leaves an input unanswered is answered with a new round at
// once, and afterwards the session has no request in flight (else it could never be expired or evicted).
//
// Regression test: resume registered the retry in the session's calls only after the immediate flush of the new
// round could have run (and found nothing to remove). The check is repeated because it is a race; under -race
// the old code failed about one round in 30.
func TestParkedRetryLeavesNothingInFlight(t *testing.T) {
	a := newAskUpstream()
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: a.ft, Kind: "stdio"})
	for i := range 200 {
		s := r.PooledSession(SessionParams{Principal: fmt.Sprint("p", i), Capabilities: json.RawMessage(`{"elicitation":{}}`)})
		first, err := ask(r.ctx, s, askCall("c1", "", ""))
		if err != nil {
			t.Fatal(err)
		}
		_, _, state := inputRequired(t, first)
		second, err := ask(r.ctx, s, askCall("c2", state, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		inputRequired(t, second)
		if n := s.InFlight(); n != 0 {
			t.Fatalf("round %d: %d requests still in flight after the new round was answered", i, n)
		}
	}
}

// TestParkedAskWithdrawn: an upstream that cancels its own request for input while the call is parked is not
// answered for it: the client's retry carries the answer, the gateway drops it, and the call goes on (here the
// upstream then finishes without the input).
func TestParkedAskWithdrawn(t *testing.T) {
	synctest.Test(t, testParkedAskWithdrawn) // the gateway writes nothing when it drops the request: Wait, then look
}

func testParkedAskWithdrawn(t *testing.T) {
	r, a, s := startAsk(t)
	first, err := ask(r.ctx, s, askCall("c1", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	key, _, state := inputRequired(t, first)
	a.ft.mu.Lock()
	a.conn.sendLocked(jsonrpc.AppendNotification(nil, "notifications/cancelled", []byte(`{"requestId":"up-e1","reason":"changed my mind"}`)))
	a.ft.mu.Unlock()
	withdrawn := func() bool {
		r.parkTable.mu.Lock()
		defer r.parkTable.mu.Unlock()
		for _, p := range r.parkTable.byID {
			p.mu.Lock()
			n := len(p.asks)
			p.mu.Unlock()
			if n != 0 {
				return false
			}
		}
		return true
	}
	synctest.Wait()
	if !withdrawn() {
		t.Fatal("the gateway kept the withdrawn request")
	}
	a.finish()
	final, err := ask(r.ctx, s, askCall("c2", state, `{"`+key+`":{"action":"accept","content":{"name":"Ada"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"c2","result":{"content":[{"type":"text","text":"finished without you"}]}}`; string(final.Raw()) != want {
		t.Errorf("retry answered %s, want %s", final.Raw(), want)
	}
	a.ft.mu.Lock()
	got := a.answered(`"up-e1"`)
	a.ft.mu.Unlock()
	if got.Kind() != jsonrpc.KindInvalid {
		t.Errorf("the withdrawn request was answered %s, want no answer", got.Raw())
	}
}

// fakeRegistry is a ReplicaRegistry of fixed addresses; err, when set, is what every look-up returns.
type fakeRegistry struct {
	urls map[string]bool
	err  error
}

var _ replicaRegistry = (*fakeRegistry)(nil)

func (f *fakeRegistry) RegisterReplica(context.Context, string, time.Duration) error { return f.err }
func (f *fakeRegistry) ReplicaRegistered(_ context.Context, url string) (bool, error) {
	return f.urls[url], f.err
}

// TestStateOwner: a retry is sent to another replica (with the caller's credentials) only when its requestState
// is intact, bound to this caller and request, unexpired, names another replica that registered itself, and the
// call is not held here; everything else is served here. The address inside a state is never trusted alone.
func TestStateOwner(t *testing.T) {
	const owner, evil = "http://10.0.0.2:8080/mcp", "http://attacker.example/collect"
	minter, _ := stateRouter("state-test-key")
	mint := func(replica, principal, name string, expires time.Time) string {
		minter.parkTable.self = replica
		return minter.stateToken("aaaaaaaaaaaaaaaaaaaaaaaa", 1, bindHash(principal, "tools/call", name), expires)
	}
	call := func(name string) jsonrpc.Message {
		m, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `"}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	later := time.Now().Add(time.Minute)
	registered := &fakeRegistry{urls: map[string]bool{owner: true}}
	for _, tc := range []struct {
		name     string
		registry replicaRegistry // nil: no replicas
		state    string
		caller   string
		want     string
		wantErr  bool
	}{
		{name: "registered owner", registry: registered, state: mint(owner, "alice", "fake__ask", later), caller: "alice", want: owner},
		{name: "no registry: no forwarding", state: mint(owner, "alice", "fake__ask", later), caller: "alice"},
		{name: "address not registered", registry: registered, state: mint(evil, "alice", "fake__ask", later), caller: "alice"},
		{name: "another principal", registry: registered, state: mint(owner, "alice", "fake__ask", later), caller: "mallory"},
		{name: "another tool", registry: registered, state: mint(owner, "alice", "fake__other", later), caller: "alice"},
		{name: "expired", registry: registered, state: mint(owner, "alice", "fake__ask", time.Now().Add(-time.Second)), caller: "alice"},
		{name: "this replica", registry: registered, state: mint("http://self/mcp", "alice", "fake__ask", later), caller: "alice"},
		{name: "altered", registry: registered, state: flipLast(mint(owner, "alice", "fake__ask", later)), caller: "alice"},
		{name: "registry down", registry: &fakeRegistry{err: errors.New("connection refused")}, state: mint(owner, "alice", "fake__ask", later), caller: "alice", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := stateRouter("state-test-key")
			r.parkTable.self, r.parkTable.registry, r.parkTable.log = "http://self/mcp", tc.registry, slog.New(slog.DiscardHandler)
			got, err := r.StateOwner(t.Context(), tc.caller, call("fake__ask"), tc.state)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("StateOwner = %q, %v; want %q (error: %v)", got, err, tc.want, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, errStoreUnavailable) {
				t.Errorf("error %v does not wrap ErrStoreUnavailable", err)
			}
		})
	}
}

// FuzzRequestState: whatever a client puts in requestState, opening it or looking up its owner never panics, and
// only a state this key sealed opens.
func FuzzRequestState(f *testing.F) {
	r, p := stateRouter("state-test-key")
	valid := r.stateToken(p.id, 2, bindHash("alice", "tools/call", "fake__ask"), time.Now().Add(time.Minute))
	for _, s := range []string{valid, flipLast(valid), statePrefix, statePrefix + ".", statePrefix + "AAAA.BBBB", "", valid + "A"} {
		f.Add(s)
	}
	call := mustParse(f, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__ask"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		parts, ok := r.openState(s)
		// Every state this key sealed here names park p (a fuzzing worker mints its own valid one, so compare
		// fields, not strings).
		if ok && (len(parts) != 5 || parts[0] != p.id) {
			t.Fatalf("openState(%q) opened %q, a state this key never sealed", s, parts)
		}
		_, _ = r.StateOwner(t.Context(), "alice", call, s)
	})
}

// TestParkedRetryProgressToken: progress the upstream reports after a retry re-attached its call goes to the
// retry under the retry's own progress token, and not at all when the retry asked for none: "progress
// notifications MUST only reference tokens that were provided in an active request", and the first request,
// answered with input_required, is no longer active. The first request asked for progress as "p1".
func TestParkedRetryProgressToken(t *testing.T) {
	for _, tc := range []struct {
		name, retryMeta string
		want            string // the token of the progress the retry sees; "" for none
	}{
		{"the retry's own token", `,"_meta":{"progressToken":"p2"}`, `"p2"`},
		{"no token on the retry", ``, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAskUpstream()
			a.progress = true
			r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: PerClient, Transport: a.ft, Kind: "stdio"})
			s := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
			first, err := ask(r.ctx, s, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"fake__ask","arguments":{},"_meta":{"progressToken":"p1"}}}`)
			if err != nil {
				t.Fatal(err)
			}
			key, _, state := inputRequired(t, first)
			out := newStream(1, 16)
			s.HandleRequest(context.Background(), mustParse(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"fake__ask","arguments":{},"inputResponses":{%q:{"action":"accept","content":{}}},"requestState":%q%s}}`, key, state, tc.retryMeta)), out)
			var tokens []string
			for {
				msg, final, ok := out.Next(r.ctx)
				if !ok {
					t.Fatal("no answer to the retry")
				}
				if final {
					break
				}
				if m := mustParse(t, string(msg)); m.MethodIs("notifications/progress") {
					st, e, _ := jsonrpc.Lookup(m.Params(), "progressToken")
					tokens = append(tokens, string(m.Params()[st:e]))
				}
			}
			if want := []string{tc.want}; tc.want == "" && len(tokens) != 0 || tc.want != "" && !slices.Equal(tokens, want) {
				t.Errorf("the retry saw progress with tokens %v, want %q", tokens, tc.want)
			}
		})
	}
}

// adaptMeta is the request as upstreamMeta makes it for l's upstream, rebuilt only when _meta changes.
func adaptMeta(s *Session, l *link, m jsonrpc.Message) jsonrpc.Message {
	me := s.upstreamMeta(l, m.Params())
	if !me.changed {
		return m
	}
	msg, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, m.ID(), m.Method(), me.params(m.Params())))
	if err != nil {
		return m
	}
	return msg
}

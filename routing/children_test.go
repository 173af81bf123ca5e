package routing

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// childUpstream is a per-client upstream whose every session (connection) has tools of its own: a test changes
// one connection's and announces it there, as a server whose tools come and go with its session does.
type childUpstream struct {
	*fakeTransport
	base  string         // the tools a fresh session lists
	tools map[int]string // a connection's own tools, once changed; guarded by fakeTransport.mu
}

func newChildUpstream(base string) *childUpstream {
	u := &childUpstream{base: base, tools: map[int]string{}}
	u.fakeTransport = newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs("tools/call") {
			name, _ := jsonrpc.LookupString(m.Params(), "name")
			text := fmt.Sprintf(`{"content":[{"type":"text","text":"%s on session %d"}]}`, name, c.n)
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(text)))
			return
		}
		tools, ok := u.tools[c.n]
		if !ok {
			tools = u.base
		}
		defaultAnswer(c, m, fakeInitCaps, tools)
	})
	return u
}

// change gives connection n the tools and announces it on that connection.
func (u *childUpstream) change(n int, tools string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tools[n] = tools
	u.conns[n-1].sendLocked([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
}

// lists counts the tools/list requests connection n received.
func (u *childUpstream) lists(n int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	count := 0
	for _, rec := range u.log {
		if rec.conn == n && rec.msg.MethodIs("tools/list") {
			count++
		}
	}
	return count
}

const (
	childBase  = `[{"name":"echo","inputSchema":{"type":"object"}}]`
	childMore  = `[{"name":"echo","inputSchema":{"type":"object"}},{"name":"extra","inputSchema":{"type":"object"}}]`
	childFewer = `[]`
)

// callText calls a tool and returns the text of its result, failing on an error.
func callText(t *testing.T, r *testRouter, s *Session, id int, tool string) string {
	t.Helper()
	m := roundTrip(t, r, s, callTool(id, tool))
	if m.Error() != nil {
		t.Fatalf("%s: %s", tool, m.Raw())
	}
	var res struct{ Content []struct{ Text string } }
	if json.Unmarshal(m.Result(), &res) != nil || len(res.Content) == 0 {
		t.Fatalf("%s: %s", tool, m.Raw())
	}
	return res.Content[0].Text
}

// childConn calls kid__echo, which starts the session's own child, and returns the child's connection number.
func childConn(t *testing.T, r *testRouter, s *Session) int {
	t.Helper()
	var n int
	got := callText(t, r, s, 1, "kid__echo")
	if _, err := fmt.Sscanf(got, "echo on session %d", &n); err != nil {
		t.Fatalf("first call: %q", got)
	}
	return n
}

// settle lets the router's background work finish on synctest's clock: the list fetches after list_changed
// (listSettle), their answers, the notifications.
func settle() {
	time.Sleep(time.Second) // the bubble's clock
	synctest.Wait()
}

// TestChildListChanged (issue 19, item 5): a per-client child's list_changed reaches its own client, whose session
// lists through that child and sees, and calls, the child's list; other clients and the template are untouched.
// A child that announces the list everyone has keeps nothing of its own; a child that goes (restarted, idle)
// takes its list with it, and its client hears so.
func TestChildListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := newChildUpstream(childBase)
		r := startRouter(t, Options{}, UpstreamConfig{Name: "kid", Prefix: "kid__", Mode: PerClient, Transport: u, Kind: "stdio", IdleTimeout: time.Minute})
		a, b := r.session(`{}`), r.session(`{}`)
		template := len(u.conns)
		ac, bc := childConn(t, r, a), childConn(t, r, b)
		settle()
		heardNow(a.Standalone(), "")
		heardNow(b.Standalone(), "")
		templateLists := u.lists(template)

		for _, st := range []struct {
			what           string
			conn           int
			tools          string
			aSees, bSees   []string
			aHears, bHears bool
			aOwn           bool
		}{
			{"a's child adds a tool", ac, childMore, []string{"kid__echo", "kid__extra"}, []string{"kid__echo"}, true, false, true},
			{"b's child drops its tools", bc, childFewer, []string{"kid__echo", "kid__extra"}, nil, false, true, true},
			{"a's child goes back to what everyone has", ac, childBase, []string{"kid__echo"}, nil, true, false, false},
			{"a's child announces the list it has (as server-everything does after initialize)", ac, childBase, []string{"kid__echo"}, nil, false, false, false},
		} {
			lists := u.lists(st.conn)
			u.change(st.conn, st.tools)
			settle()
			if u.lists(st.conn) != lists+1 {
				t.Errorf("%s: the child was listed %d times, want once", st.what, u.lists(st.conn)-lists)
			}
			if got := heardNow(a.Standalone(), "notifications/tools/list_changed"); got != st.aHears {
				t.Errorf("%s: a heard list_changed %v, want %v", st.what, got, st.aHears)
			}
			if got := heardNow(b.Standalone(), "notifications/tools/list_changed"); got != st.bHears {
				t.Errorf("%s: b heard list_changed %v, want %v", st.what, got, st.bHears)
			}
			if got := names(listAll(t, r, a)); !slices.Equal(got, st.aSees) {
				t.Errorf("%s: a sees %v, want %v", st.what, got, st.aSees)
			}
			if got := names(listAll(t, r, b)); !slices.Equal(got, st.bSees) {
				t.Errorf("%s: b sees %v, want %v", st.what, got, st.bSees)
			}
			if got := a.children.live.Load(); got != st.aOwn {
				t.Errorf("%s: a has own lists %v, want %v", st.what, got, st.aOwn)
			}
		}
		if got := u.lists(template); got != templateLists {
			t.Errorf("the template session listed %d times more: a child's list_changed is its client's business", got-templateLists)
		}

		// A burst of announcements is one fetch.
		lists := u.lists(ac)
		for range 5 {
			u.change(ac, childMore)
		}
		settle()
		if got := u.lists(ac) - lists; got != 1 {
			t.Errorf("five list_changed in a burst made %d fetches, want 1", got)
		}
		if !heardNow(a.Standalone(), "notifications/tools/list_changed") {
			t.Error("a did not hear that its child added a tool")
		}
		// a's own tool is called on a's own child; b has no such tool.
		if got, want := callText(t, r, a, 2, "kid__extra"), fmt.Sprintf("extra on session %d", ac); got != want {
			t.Errorf("a's own tool: %q, want %q", got, want)
		}
		if m := roundTrip(t, r, b, callTool(2, "kid__extra")); m.Error() == nil {
			t.Errorf("b called a tool only a's child has: %s", m.Raw())
		}

		// The child restarts: the new one lists what everyone has, and a hears that its list changed back.
		a.links.peek(r.upstream("kid")).restart()
		settle()
		if !heardNow(a.Standalone(), "notifications/tools/list_changed") {
			t.Error("a did not hear that its restarted child lists what everyone has")
		}
		if got := names(listAll(t, r, a)); !slices.Equal(got, []string{"kid__echo"}) {
			t.Errorf("after the restart a sees %v", got)
		}

		// The new child adds its tool again; then it is closed for idleness, and a's list goes with it.
		u.change(len(u.conns), childMore)
		settle()
		if !heardNow(a.Standalone(), "notifications/tools/list_changed") || !a.children.live.Load() {
			t.Fatal("the new child's tool did not reach a")
		}
		for _, up := range a.links.closeIdle(time.Now().Add(2 * time.Minute)) {
			a.links.childGone(a, up)
		}
		if !heardNow(a.Standalone(), "notifications/tools/list_changed") {
			t.Error("a did not hear that its list went with its idle child")
		}
		if got := names(listAll(t, r, a)); !slices.Equal(got, []string{"kid__echo"}) {
			t.Errorf("after the idle close a sees %v", got)
		}
		if a.children.live.Load() {
			t.Error("a keeps lists of a child that is gone")
		}
	})
}

// TestChildListChangedPooled: a 2026-07-28 client's pooled session follows its child's list too; it hears
// nothing (it has no stream for that), and its next tools/list shows the change.
func TestChildListChangedPooled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := newChildUpstream(childBase)
		r := startRouter(t, Options{}, UpstreamConfig{Name: "kid", Prefix: "kid__", Mode: PerClient, Transport: u, Kind: "stdio"})
		s := r.PooledSession(SessionParams{Capabilities: json.RawMessage(`{}`)})
		n := childConn(t, r, s)
		u.change(n, childMore)
		settle()
		if got := names(listAll(t, r, s)); !slices.Equal(got, []string{"kid__echo", "kid__extra"}) {
			t.Errorf("the pooled session sees %v", got)
		}
		if got, want := callText(t, r, s, 2, "kid__extra"), fmt.Sprintf("extra on session %d", n); got != want {
			t.Errorf("the child's own tool: %q, want %q", got, want)
		}
		if _, _, ok := s.Standalone().TryNext(); ok {
			t.Error("a pooled session queued a notification it has nobody to send to")
		}
	})
}

// heardNow drains what a stream holds now and reports whether method was among it.
func heardNow(s *Stream, method string) bool {
	found := false
	for {
		msg, _, ok := s.TryNext()
		if !ok {
			return found
		}
		found = found || method != "" && strings.Contains(string(msg), `"`+method+`"`)
	}
}

package routing

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// pagedTTLServer is a stateless upstream whose tools/list comes in two pages, fresh for 8 s and 5 s, and whose
// prompts/list carries no ttlMs.
type pagedTTLServer struct{}

func (pagedTTLServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Parse(body)
	if err != nil || m.Kind() != jsonrpc.KindRequest {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := `{"resultType":"complete"}`
	switch m.Method() {
	case "server/discover":
		result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"prompts":{}},"serverInfo":{"name":"paged","version":"1"},"ttlMs":0,"cacheScope":"public"}`
	case "tools/list":
		result = `{"resultType":"complete","tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"2","ttlMs":8000,"cacheScope":"public"}`
		if c, _ := jsonrpc.LookupString(m.Params(), "cursor"); c == "2" {
			result = `{"resultType":"complete","tools":[{"name":"b","inputSchema":{"type":"object"}}],"ttlMs":5000,"cacheScope":"public"}`
		}
	case "prompts/list":
		result = `{"resultType":"complete","prompts":[{"name":"p"}]}`
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
}

// TestListCache (issue 31, item 17): what routing tells the front end of a list: the shortest ttlMs of the
// upstreams' own lists of its kind (every page counted), none for a kind they gave none for; private when a
// policy judges the request or in search mode.
func TestListCache(t *testing.T) {
	srv := httptest.NewServer(pagedTTLServer{})
	t.Cleanup(srv.Close)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "paged", URL: srv.URL, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, Options{}, UpstreamConfig{Name: "paged", Prefix: "p__", Mode: Shared, Transport: tr, Kind: "http"})
	s := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{}`)})
	allowAll := WithAllow(context.Background(), func(string, string, string) bool { return true })
	for _, tc := range []struct {
		name, method string
		ctx          context.Context
		private      bool
		ttl          time.Duration
		capped       bool
	}{
		{"tools, the shorter page's", "tools/list", context.Background(), false, 5 * time.Second, true},
		{"prompts, none said", "prompts/list", context.Background(), false, 0, false},
		{"resources, never listed", "resources/list", context.Background(), false, 0, false},
		{"a policy", "tools/list", allowAll, true, 5 * time.Second, true},
		{"not a list", "resources/read", context.Background(), true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			private, ttl, capped := s.ListCache(tc.ctx, tc.method)
			if private != tc.private || ttl != tc.ttl || capped != tc.capped {
				t.Errorf("ListCache = %t, %v, %t; want %t, %v, %t", private, ttl, capped, tc.private, tc.ttl, tc.capped)
			}
		})
	}
	r.SetShape(Shape{Root: &SearchMode{}})
	if private, _, _ := s.ListCache(context.Background(), "tools/list"); !private {
		t.Error("a search-mode tools/list is not private")
	}
	if private, _, _ := s.ListCache(context.Background(), "prompts/list"); private {
		t.Error("prompts/list in search mode is private; only tools/list is the caller's there")
	}
}

// TestListCacheOwnLists: a session whose own upstream session lists something else than everyone's sees a list of
// its own, which is private; the others' stay public, and so does its own once its list is everyone's again.
func TestListCacheOwnLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := newChildUpstream(childBase)
		r := startRouter(t, Options{}, UpstreamConfig{Name: "kid", Prefix: "kid__", Mode: PerClient, Transport: u, Kind: "stdio", IdleTimeout: time.Minute})
		a, b := r.session(`{}`), r.session(`{}`)
		ac, _ := childConn(t, r, a), childConn(t, r, b)
		settle()
		for _, st := range []struct {
			what               string
			tools              string
			aPrivate, bPrivate bool
		}{
			{"a's child adds a tool", childMore, true, false},
			{"a's child goes back to what everyone has", childBase, false, false},
		} {
			u.change(ac, st.tools)
			settle()
			if got, _, _ := a.ListCache(context.Background(), "tools/list"); got != st.aPrivate {
				t.Errorf("%s: a's tools/list private %t, want %t", st.what, got, st.aPrivate)
			}
			if got, _, _ := b.ListCache(context.Background(), "tools/list"); got != st.bPrivate {
				t.Errorf("%s: b's tools/list private %t, want %t", st.what, got, st.bPrivate)
			}
		}
	})
}

package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// golden compares got with testdata/golden/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got %s\nwant %s", name, got, want)
	}
}

const goodOrigin = "http://good.example"

// rawGateway is a gateway for the transport-level tests: one shared HTTP upstream, a 1 KiB body limit and an
// Origin allow-list.
func rawGateway(t *testing.T) *harness {
	t.Helper()
	up, _ := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	return startGateway(t, routing.Options{}, gateway.Options{
		MaxBodyBytes: 1024,
		AllowOrigin:  func(o string) bool { return o == goodOrigin },
	}, up)
}

// TestHTTPBadInput: the front end's answers to malformed, invalid or unacceptable HTTP requests, each with the
// HTTP status and the JSON-RPC error code the spec asks for.
func TestHTTPBadInput(t *testing.T) {
	h := rawGateway(t)
	live := h.raw(t)
	live.initialize("2025-11-25")

	type tc struct {
		name    string
		body    string
		hdr     map[string]string
		session string // "live", "none", or a literal id
		status  int
		code    int    // expected JSON-RPC error code; 0 means the answer is not an error
		mention string // the error message must contain this
	}
	cases := []tc{
		{name: "malformed JSON", body: readTestdata(t, "requests/malformed.json"), session: "live", status: 400, code: -32700},
		{name: "not JSON-RPC", body: readTestdata(t, "requests/not-jsonrpc.json"), session: "live", status: 400, code: -32600},
		{name: "unknown method", body: readTestdata(t, "requests/unknown-method.json"), session: "live", status: 200, code: -32601, mention: "tools/frobnicate"},
		{name: "unknown tool", body: readTestdata(t, "requests/unknown-tool.json"), session: "live", status: 200, code: -32602, mention: "nosuch__tool"},
		{name: "missing session", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session: "none", status: 400, code: -32600},
		{name: "unknown session", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session: "0123456789abcdef0123456789abcdef", status: 404, code: -32600},
		{name: "unsupported protocol version", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session: "live", hdr: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, status: 400, code: -32022, mention: "1999-01-01"},
		{name: "batch in 2026-07-28", body: `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, session: "none", hdr: map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, status: 400, code: -32600, mention: "batches"},
		{name: "oversized body", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"` + strings.Repeat("x", 2048) + `"}}}`, session: "live", status: 413, code: -32600},
		{name: "bad origin", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session: "live", hdr: map[string]string{"Origin": "http://evil.example"}, status: 403, code: -32600},
		{name: "good origin", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session: "live", hdr: map[string]string{"Origin": goodOrigin}, status: 200},
		{name: "Accept without event-stream", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session: "live", hdr: map[string]string{"Accept": "application/json"}, status: 406, code: -32600},
		{name: "batch in a 2025-06-18 session", body: readTestdata(t, "requests/batch.json"), session: "0618", status: 400, code: -32600},
	}
	old := h.raw(t)
	old.initialize("2025-06-18")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := &rawClient{t: t, url: h.url, hc: live.hc, version: live.version}
			switch c.session {
			case "live":
				cl.session = live.session
			case "0618":
				cl.session, cl.version = old.session, old.version
			case "none":
			default:
				cl.session = c.session
			}
			r := cl.do(c.body, c.hdr)
			if r.status != c.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, c.status, r.body)
			}
			m := r.final(t)
			if c.code == 0 {
				if m.Error != nil {
					t.Fatalf("unexpected error %d: %s", m.Error.Code, m.Error.Message)
				}
				return
			}
			if m.Error == nil {
				t.Fatalf("want error %d, got %s", c.code, r.body)
			}
			if m.Error.Code != c.code {
				t.Errorf("error code %d, want %d (%s)", m.Error.Code, c.code, m.Error.Message)
			}
			if !strings.Contains(m.Error.Message, c.mention) {
				t.Errorf("error message %q does not mention %q", m.Error.Message, c.mention)
			}
		})
	}

	// The session is unharmed by all of the above.
	if r := live.do(`{"jsonrpc":"2.0","id":99,"method":"ping"}`, nil); r.status != 200 || r.final(t).Error != nil {
		t.Errorf("ping after bad input: HTTP %d: %s", r.status, r.body)
	}
}

// TestHTTPBodyLength: the body limit holds the same whether the client declares the body's length or sends it
// chunked; a body that ends before its declared length is a parse error, not a hang; the session survives all.
func TestHTTPBodyLength(t *testing.T) {
	h := rawGateway(t) // 1 KiB limit
	live := h.raw(t)
	live.initialize("2025-11-25")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	atLimit := ping + strings.Repeat(" ", 1024-len(ping))
	for _, c := range []struct {
		name    string
		body    string
		chunked bool
		status  int
	}{
		{"declared, at the limit", atLimit, false, http.StatusOK},
		{"declared, over the limit", atLimit + " ", false, http.StatusRequestEntityTooLarge},
		{"chunked, at the limit", atLimit, true, http.StatusOK},
		{"chunked, over the limit", atLimit + " ", true, http.StatusRequestEntityTooLarge},
		{"declared, empty", "", false, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(c.body)
			if c.chunked {
				body = io.MultiReader(body) // a reader net/http cannot measure: sent chunked
			}
			req := live.post(body)
			resp, err := live.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// net/http sends a body of length 0 with a non-nil Body chunked, as of unknown length.
			if want := int64(len(c.body)); c.chunked && req.ContentLength != 0 || !c.chunked && req.ContentLength != want {
				t.Fatalf("sent with Content-Length %d; want chunked %v", req.ContentLength, c.chunked)
			}
			r := readResp(t, resp)
			if r.status != c.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, c.status, r.body)
			}
			if m := r.final(t); (m.Error == nil) != (c.status == http.StatusOK) {
				t.Errorf("answer %s for HTTP %d", r.body, r.status)
			}
		})
	}

	t.Run("shorter than declared", func(t *testing.T) {
		u, err := url.Parse(h.url)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s",
			u.Path, u.Host, live.session, live.version, len(ping)+50, ping)
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a body shorter than its Content-Length: %v", err)
		}
		defer resp.Body.Close()
		r := readResp(t, resp)
		if m := r.final(t); r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32700 {
			t.Errorf("HTTP %d %s, want 400 with -32700", r.status, r.body)
		}
	})

	if r := live.do(`{"jsonrpc":"2.0","id":99,"method":"ping"}`, nil); r.status != http.StatusOK || r.final(t).Error != nil {
		t.Errorf("ping afterwards: HTTP %d: %s", r.status, r.body)
	}
}

// TestHTTPBatch2025_03_26: a batch in a 2025-03-26 session is answered with one JSON array holding every
// request's response (and nothing for the notification).
func TestHTTPBatch2025_03_26(t *testing.T) {
	h := rawGateway(t)
	cl := h.raw(t)
	cl.initialize("2025-03-26")
	r := cl.do(readTestdata(t, "requests/batch.json"), nil)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("HTTP %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if b := bytes.TrimSpace(r.body); len(b) == 0 || b[0] != '[' {
		t.Fatalf("the answer is not a JSON array: %s", r.body)
	}
	// Normalise: the order of the answers within the array is free.
	var arr []map[string]any
	if err := json.Unmarshal(r.body, &arr); err != nil {
		t.Fatal(err)
	}
	sort.Slice(arr, func(i, j int) bool { return arr[i]["id"].(float64) < arr[j]["id"].(float64) })
	got, _ := json.MarshalIndent(arr, "", "  ")
	golden(t, "batch-2025-03-26.json", append(got, '\n'))
}

// TestNonIntegerIDs: "The request ID MUST be a string or integer": a fraction or an exponent is an invalid request
// (-32600), never a parse error (-32700), on every front end: a streamable HTTP POST (HTTP 400), an element of a
// 2025-03-26 batch (its own error in the batch's answer, the others answered), a 2026-07-28 POST, a legacy HTTP+SSE
// message, and a stdio line alone or in a batch.
func TestNonIntegerIDs(t *testing.T) {
	h := rawGateway(t)
	base := strings.TrimSuffix(h.url, "/mcp")
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"id"}}}`
	}
	// batchAnswer finds the error answering the element with id null among a batch's answers.
	batchAnswer := func(t *testing.T, body []byte) rpcMsg { return batchElement(t, body, "null") }

	streamable := h.raw(t)
	streamable.initialize("2025-11-25")
	batch := h.raw(t)
	batch.initialize("2025-03-26")
	modern := h.raw(t)
	legacy := openLegacy(t, base, nil)
	stdio := startStdio(t, h.r)
	stdio.initialize("2025-03-26")

	frontEnds := []struct {
		name   string
		status int // the HTTP status, 0 for stdio
		answer func(t *testing.T, id string) (status int, m rpcMsg)
	}{
		{"streamable HTTP", http.StatusBadRequest, func(t *testing.T, id string) (int, rpcMsg) {
			r := streamable.do(call(id), nil)
			return r.status, decodeMsg(t, r.body)
		}},
		{"2025-03-26 batch element", http.StatusOK, func(t *testing.T, id string) (int, rpcMsg) {
			r := batch.do("["+call(id)+`,{"jsonrpc":"2.0","id":2,"method":"ping"}]`, nil)
			return r.status, batchAnswer(t, r.body)
		}},
		{"2026-07-28", http.StatusBadRequest, func(t *testing.T, id string) (int, rpcMsg) {
			body := modernBody(t, json.Number(id), "tools/call", map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": "id"}}, `{}`)
			r := modernDo(t, modern, body, nil)
			return r.status, decodeMsg(t, r.body)
		}},
		{"HTTP+SSE message", http.StatusBadRequest, func(t *testing.T, id string) (int, rpcMsg) {
			r := legacy.post(call(id), nil)
			return r.status, decodeMsg(t, r.body)
		}},
		{"stdio", 0, func(t *testing.T, id string) (int, rpcMsg) {
			stdio.send(call(id))
			return 0, decodeMsg(t, []byte(stdio.next()))
		}},
		{"stdio batch element", 0, func(t *testing.T, id string) (int, rpcMsg) {
			stdio.send("[" + call(id) + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
			return 0, batchAnswer(t, []byte(stdio.next()))
		}},
	}
	for _, fe := range frontEnds {
		for _, id := range []string{`1.5`, `1E400`, `1e3`, `-0.0`} {
			t.Run(fe.name+"/"+id, func(t *testing.T) {
				status, m := fe.answer(t, id)
				if status != fe.status || m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "integer") {
					t.Errorf("HTTP %d, answer %+v; want %d and -32600 saying ids are strings or integers", status, m, fe.status)
				}
			})
		}
	}
}

// TestInitializeBounds: a session keeps its client's capabilities and client info for its life, so initialize
// refuses either over 16 KiB (-32602 naming the limit, no session) on every front end, as the 2026-07-28 front end
// does for each request.
func TestInitializeBounds(t *testing.T) {
	h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	pad := strings.Repeat("x", 17<<10)
	bodies := map[string]string{
		"capabilities": `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"experimental":{"pad":"` + pad + `"}},"clientInfo":{"name":"t","version":"1"}}}`,
		"clientInfo":   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1","title":"` + pad + `"}}}`,
	}
	stdio := startStdio(t, h.r)
	frontEnds := []struct {
		name   string
		answer func(t *testing.T, body string) rpcMsg
	}{
		{"streamable HTTP", func(t *testing.T, body string) rpcMsg {
			r := h.raw(t).do(body, nil)
			if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("a session was started: %s", sid)
			}
			return r.final(t)
		}},
		{"HTTP+SSE", func(t *testing.T, body string) rpcMsg {
			lc := openLegacy(t, strings.TrimSuffix(h.url, "/mcp"), nil)
			if r := lc.post(body, nil); r.status != http.StatusAccepted {
				t.Fatalf("POST: HTTP %d %s", r.status, r.body)
			}
			return decodeMsg(t, []byte(lc.next()[1]))
		}},
		{"stdio", func(t *testing.T, body string) rpcMsg {
			stdio.send(body)
			return decodeMsg(t, []byte(stdio.next()))
		}},
	}
	for _, fe := range frontEnds {
		for member, body := range bodies {
			t.Run(fe.name+"/"+member, func(t *testing.T) {
				m := fe.answer(t, body)
				if m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, member) || !strings.Contains(m.Error.Message, "at most 16384") {
					t.Errorf("answer %+v %s, want -32602 naming %s and the limit", m.Error, m.Result, member)
				}
			})
		}
	}
	// Within the bound, the stdio connection (whose initialize was refused) can still start its session.
	stdio.initialize("2025-03-26")
}

// TestHTTPDelete: DELETE ends the session; the id is then unknown (404) for every method.
func TestHTTPDelete(t *testing.T) {
	h := rawGateway(t)
	cl := h.raw(t)
	cl.initialize("2025-11-25")
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodDelete, h.url, nil)
	req.Header.Set("Mcp-Session-Id", cl.session)
	req.Header.Set("Mcp-Protocol-Version", cl.version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: HTTP %d", resp.StatusCode)
	}
	if r := cl.do(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); r.status != http.StatusNotFound {
		t.Errorf("ping after DELETE: HTTP %d, want 404: %s", r.status, r.body)
	}
	greq, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, h.url, nil)
	greq.Header.Set("Mcp-Session-Id", cl.session)
	greq.Header.Set("Accept", "text/event-stream")
	gresp, err := http.DefaultClient.Do(greq)
	if err != nil {
		t.Fatal(err)
	}
	gresp.Body.Close()
	if gresp.StatusCode != http.StatusNotFound {
		t.Errorf("GET after DELETE: HTTP %d, want 404", gresp.StatusCode)
	}
}

// TestHTTPIDsRoundTrip: client ids travel back byte for byte, whether the gateway answers itself (ping) or an
// upstream does under an id of the gateway's (tools/call).
func TestHTTPIDsRoundTrip(t *testing.T) {
	h := rawGateway(t)
	cl := h.raw(t)
	cl.initialize("2025-11-25")
	ids := []string{`9007199254740993`, `"a\"b"`, `-0`, `"ü\u00fc"`, `12345678901234567890123`, `18446744073709551616`}
	for _, id := range ids {
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"id"}}}`,
		} {
			r := cl.do(body, nil)
			if r.status != http.StatusOK {
				t.Errorf("id %s: HTTP %d: %s", id, r.status, r.body)
				continue
			}
			m := r.final(t)
			if string(m.ID) != id {
				t.Errorf("id %s came back as %s in %s", id, m.ID, r.body)
			}
			if m.Error != nil {
				t.Errorf("id %s: error %d %s", id, m.Error.Code, m.Error.Message)
			}
		}
	}
}

// TestHTTPCORS: a browser client of an allowed origin passes the preflight (which carries no credentials, so it is
// answered before any auth) and can read the session id, the negotiated version and a 401's challenge; other
// origins are refused, headers MCP does not use are not granted, and a gateway without an origin policy grants
// CORS to no one.
func TestHTTPCORS(t *testing.T) {
	h := rawGateway(t)
	preflight := func(t *testing.T, base, path, origin, headers string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodOptions, base+path, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", headers)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	exposes := func(hdr http.Header, names ...string) bool {
		for _, n := range names {
			if !strings.Contains(hdr.Get("Access-Control-Expose-Headers"), n) {
				return false
			}
		}
		return true
	}
	const mcpHeaders = "authorization, content-type, mcp-session-id, Mcp-Protocol-Version, mcp-method, mcp-name, mcp-param-region, last-event-id"
	base := strings.TrimSuffix(h.url, "/mcp")
	for _, path := range []string{"/mcp", "/sse", "/message"} {
		resp := preflight(t, base, path, goodOrigin, mcpHeaders+", x-evil, cookie")
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != goodOrigin ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
			t.Errorf("preflight of %s from an allowed origin: HTTP %d %v", path, resp.StatusCode, resp.Header)
		}
		if got := resp.Header.Get("Access-Control-Allow-Headers"); got != mcpHeaders {
			t.Errorf("preflight of %s grants headers %q, want %q", path, got, mcpHeaders)
		}
		if resp := preflight(t, base, path, "https://evil.example", "content-type"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight of %s from another origin: HTTP %d %v, want 403 without CORS headers", path, resp.StatusCode, resp.Header)
		}
	}
	cl := h.raw(t)
	r := cl.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, map[string]string{"Origin": goodOrigin})
	if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != goodOrigin || !exposes(r.header, "Mcp-Session-Id", "MCP-Protocol-Version") {
		t.Errorf("initialize from an allowed origin: HTTP %d %v", r.status, r.header)
	}
	if r := cl.do(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an answer to a request without Origin carries CORS headers: %v", r.header)
	}

	// Without an origin policy requests from any origin are accepted, but no page may read their answers.
	open := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	if resp := preflight(t, strings.TrimSuffix(open.url, "/mcp"), "/mcp", goodOrigin, "content-type"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight without an origin policy: HTTP %d %v, want no CORS grant", resp.StatusCode, resp.Header)
	}

	// Behind the resource server: the preflight passes without a token, the 401 that follows is readable with its
	// challenge, and the metadata the challenge names can be fetched across origins.
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{allowOrigin: func(o string) bool { return o == goodOrigin }},
		routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	if resp := preflight(t, g.base, "/mcp", goodOrigin, "authorization, content-type"); resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Headers") != "authorization, content-type" {
		t.Errorf("preflight behind auth: HTTP %d %v, want 204 granting Authorization (a preflight has no credentials)", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, g.mcpURL, strings.NewReader(initBody))
	req.Header.Set("Origin", goodOrigin)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != goodOrigin || !exposes(resp.Header, "WWW-Authenticate") {
			t.Errorf("401 to an allowed origin: HTTP %d %v, want its challenge readable", resp.StatusCode, resp.Header)
		}
	}
	if resp := preflight(t, g.base, "/.well-known/oauth-protected-resource/mcp", goodOrigin, "mcp-protocol-version"); resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Errorf("preflight of the metadata: HTTP %d %v", resp.StatusCode, resp.Header)
	}
}

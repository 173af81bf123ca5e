package main

// The attack suite (issue 14, docs/security.md): the real binary, real peers, and requests an attacker or a
// broken client would send, each with the answer it must get. Deeper cases live beside the code they attack and
// are listed in docs/security.md; this file holds what a black box shows from outside.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// attack is one request and the answer it must get.
type attack struct {
	name    string
	admin   bool              // sent to the admin listener instead of the MCP one
	method  string            // default POST
	path    string            // default /mcp
	headers map[string]string // on top of the defaults of its kind (see send)
	session bool              // carries a live 2025-11-25 session
	body    string
	status  int    // HTTP status
	code    int    // JSON-RPC error code, 0 for none
	message string // a fragment of the error message, or of the body
}

// modernMeta is the _meta a 2026-07-28 request must carry.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// attackCursorSecret is the gateway's cursor secret in TestAttacks: its requestStates begin "sbrs1.<key id>.".
const attackCursorSecret = "cursor-secret-4f1c9e-0123456789abcdef0123456789"

// stateKeyID is the key id a gateway with secret puts in its requestStates, derived as routing derives it (so
// that a forgery can claim this gateway's key).
func stateKeyID(secret string) string {
	h := sha256.Sum256(append([]byte("switchboard requestState key id\x00"), secret...))
	return base64.RawURLEncoding.EncodeToString(h[:6])
}

func attacks() []attack {
	big := `{"experimental":{"pad":"` + strings.Repeat("x", 17<<10) + `"}}`
	batch := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	modern := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
	return []attack{
		// Bad input, legacy era.
		{name: "not JSON", body: `{"jsonrpc":`, status: 400, code: -32700},
		{name: "JSON, not JSON-RPC", body: `{"hello":1}`, status: 400, code: -32600},
		{name: "fractional id", session: true, body: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, status: 400, code: -32600, message: "integer"},
		{name: "exponent id", session: true, body: `{"jsonrpc":"2.0","id":1E400,"method":"ping"}`, status: 400, code: -32600, message: "integer"},
		{name: "no session", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, headers: map[string]string{"MCP-Protocol-Version": "2025-11-25"}, status: 400, code: -32600, message: "Mcp-Session-Id"},
		{name: "unknown session", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, headers: map[string]string{"Mcp-Session-Id": "forged-0123456789", "MCP-Protocol-Version": "2025-11-25"}, status: 404},
		{name: "text/plain body", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{"Content-Type": "text/plain"}, status: 415},
		{name: "body over maxBodyBytes", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`, status: 413},
		{name: "batch in 2025-11-25", session: true, body: batch(2), status: 400, code: -32600, message: "batches are not allowed"},
		{name: "unknown tool", session: true, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, status: 200, code: -32602, message: "unknown tool"},
		// Bad input, 2026-07-28.
		{name: "modern: capabilities over 16 KiB", headers: modern, body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + big + `}}}`, status: 400, code: -32602, message: "at most 16384"},
		{name: "modern: batch", headers: modern, body: batch(2), status: 400, code: -32600},
		{name: "modern: header and body disagree", headers: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/list"}, body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, status: 400, code: -32020},
		{name: "modern: fractional id", headers: modern, body: `{"jsonrpc":"2.0","id":2.5,"method":"tools/list","params":{` + modernMeta + `}}`, status: 400, code: -32600},
		{name: "modern: forged requestState", headers: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha__echo"},
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},"requestState":"sbrs1.` + stateKeyID(attackCursorSecret) + `.AAAA.BBBB","inputResponses":{},` + modernMeta + `}}`, status: 400, code: -32602, message: "requestState"},
		// Another Switchboard's state (another key) is the upstream's to judge: it passes through, and the call runs.
		{name: "modern: another gateway's requestState", headers: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha__echo"},
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},"requestState":"sbrs1.AAAAAAAA.AAAA.BBBB","inputResponses":{},` + modernMeta + `}}`, status: 200, message: "alpha: x"},
		// A name twice in one object (issue 31): the gateway would check one member and the upstream act on the
		// other (the last, for most parsers), so it is refused whatever the spelling, at any depth.
		{name: "arguments twice", session: true, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything__echo","arguments":{},"arguments":{"message":"CLIENT-CHOSEN"}}}`, status: 200, code: -32602, message: "twice in one object"},
		{name: "arguments twice, escaped", session: true, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything__echo","arguments":{},"\u0061rguments":{"message":"CLIENT-CHOSEN"}}}`, status: 200, code: -32602, message: "twice in one object"},
		{name: "an argument twice", session: true, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"a","m\u0065ssage":"b"}}}`, status: 200, code: -32602, message: "twice in one object"},
		{name: "modern: arguments twice", headers: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "everything__echo"},
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everything__echo","arguments":{},"\u0061rguments":{"message":"CLIENT-CHOSEN"},` + modernMeta + `}}`, status: 400, code: -32602, message: "twice in one object"},
		{name: "initialize with capabilities twice", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{},"r\u006fots":{"listChanged":true}},"clientInfo":{"name":"x","version":"1"}}}`, status: 200, code: -32602, message: "twice in one object"},
		// Browsers: CORS and DNS rebinding.
		{name: "preflight, foreign origin", method: http.MethodOptions, headers: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, status: 403},
		{name: "preflight, local origin", method: http.MethodOptions, headers: map[string]string{"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, mcp-session-id"}, status: 204},
		{name: "foreign Origin", session: true, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{"Origin": "https://evil.example"}, status: 403},
		{name: "rebinding Host", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{"Host": "evil.example"}, status: 403},
		// The admin API: CSRF and rebinding.
		{name: "admin: foreign Host", admin: true, method: http.MethodGet, path: "/admin/upstreams", headers: map[string]string{"Host": "evil.example"}, status: 403},
		{name: "admin: drain from a page", admin: true, path: "/admin/upstreams/alpha/drain", headers: map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, status: 403},
		{name: "admin: drain as text/plain", admin: true, path: "/admin/upstreams/alpha/drain", headers: map[string]string{"Content-Type": "text/plain"}, status: 415},
		{name: "admin: reload as a form", admin: true, path: "/admin/reload", headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415},
		{name: "admin: status", admin: true, method: http.MethodGet, path: "/admin/upstreams", status: 200, message: `"alpha"`},
	}
}

// TestAttacks runs the attack table against one gateway, then the cases that need more than one request.
func TestAttacks(t *testing.T) {
	missing := e2eGate(t)
	root := repoRoot(t)
	everythingJS := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(everythingJS); err != nil {
		missing("server-everything not installed: run .ci/setup")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found on PATH: %v", err)
	}
	tmp := t.TempDir()
	bin := buildBinary(t, tmp)
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base, adminBase := "http://"+listen, "http://"+admin
	cfgPath := filepath.Join(tmp, "switchboard.yaml")
	writeAtomic(t, cfgPath, fmt.Sprintf(`listen: %q
cursorSecret: "${SWITCHBOARD_CURSOR_SECRET}"
upstreams:
  - {name: alpha, url: %q, session: shared}
  - {name: everything, command: %q, args: [%q, stdio], session: shared}
`, listen, sdkUpstream(t, "alpha")+"/mcp", node, everythingJS))
	// Secrets in the gateway's environment, as the docs tell operators to pass them.
	const cursorSecret, redisPassword = attackCursorSecret, "redis-password-7d2a"
	gw := startProcess(t, "switchboard-attack", tmp, []string{"SWITCHBOARD_CURSOR_SECRET=" + cursorSecret, "REDIS_PASSWORD=" + redisPassword},
		bin, "serve", "--config", cfgPath, "--admin-listen", admin)
	if err := waitReady(context.Background(), base+"/readyz", opsWait, gw); err != nil {
		t.Fatalf("switchboard did not become ready: %v\n%s", err, gw.log.tail(40))
	}
	session := initSession(t, base)

	for _, a := range attacks() {
		t.Run(a.name, func(t *testing.T) {
			url := base
			if a.admin {
				url = adminBase
			}
			status, body := send(t, url, a, session)
			if status != a.status {
				t.Fatalf("HTTP %d, want %d: %.300s", status, a.status, body)
			}
			if a.code != 0 {
				var m struct {
					Error *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(lastJSON(body), &m); err != nil || m.Error == nil || m.Error.Code != a.code {
					t.Fatalf("want JSON-RPC error %d; got %.300s", a.code, body)
				}
			}
			if !strings.Contains(body, a.message) {
				t.Errorf("the answer does not say %q: %.300s", a.message, body)
			}
		})
	}

	// A stdio child's tools read its environment and hand it to the client: the gateway's secrets must not be
	// there. (server-everything's get-env returned them all before children got a minimal environment.)
	t.Run("gateway secrets do not reach a stdio child", func(t *testing.T) {
		_, body := send(t, base, attack{session: true, body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"everything__get-env","arguments":{}}}`}, session)
		if !strings.Contains(body, "PATH") {
			t.Fatalf("get-env did not answer with an environment: %.300s", body)
		}
		for _, secret := range []string{cursorSecret, redisPassword, "SWITCHBOARD_CURSOR_SECRET"} {
			if strings.Contains(body, secret) {
				t.Errorf("the child's environment shows %q", secret)
			}
		}
	})

	// A 2025-03-26 batch may not fan out without bound.
	t.Run("batch of 101", func(t *testing.T) {
		s := initSessionVersion(t, base, "2025-03-26")
		parts := make([]string, 101)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`, i+1)
		}
		status, body := send(t, base, attack{session: true, body: "[" + strings.Join(parts, ",") + "]", headers: map[string]string{"MCP-Protocol-Version": "2025-03-26"}}, s)
		if status != 400 || !strings.Contains(body, "at most 100") {
			t.Errorf("HTTP %d %.300s, want 400 naming the limit", status, body)
		}
	})
}

// send posts (or sends a.method) one attack and returns the status and body.
func send(t *testing.T, url string, a attack, session string) (int, string) {
	t.Helper()
	method, path := a.method, a.path
	if method == "" {
		method = http.MethodPost
	}
	if path == "" && !a.admin {
		path = "/mcp"
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url+path, strings.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost && !a.admin {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if a.session {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	for k, v := range a.headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// lastJSON is the last JSON object of a body: the body itself, or the data of an SSE stream's last event.
func lastJSON(body string) []byte {
	if i := strings.LastIndex(body, "data: "); i >= 0 {
		line, _, _ := strings.Cut(body[i+len("data: "):], "\n")
		return []byte(line)
	}
	return []byte(body)
}

func initSession(t *testing.T, base string) string { return initSessionVersion(t, base, "2025-11-25") }

// initSessionVersion starts a session of the given version and returns its id.
func initSessionVersion(t *testing.T, base, version string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":`+strconv.Quote(version)+`,"capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize: HTTP %d without a session", resp.StatusCode)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("MCP-Protocol-Version", version)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	return id
}

// serveAttackGateway runs `switchboard serve` (built for the test) on the config config(listen) makes, listening
// on a free loopback address, and returns once it is ready: the set-up the black-box attacks beside TestAttacks
// share.
func serveAttackGateway(t *testing.T, name string, config func(listen string) string) (base string, gw *process) {
	t.Helper()
	tmp := t.TempDir()
	bin := buildBinary(t, tmp)
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfgPath := filepath.Join(tmp, "switchboard.yaml")
	writeAtomic(t, cfgPath, config(listen))
	gw = startProcess(t, name, tmp, nil, bin, "serve", "--config", cfgPath)
	base = "http://" + listen
	if err := waitReady(context.Background(), base+"/readyz", opsWait, gw); err != nil {
		t.Fatalf("switchboard did not become ready: %v\n%s", err, gw.log.tail(40))
	}
	return base, gw
}

package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/oauth2/clientcredentials"
)

// tokenEndpoint records token requests and answers with numbered tokens.
type tokenEndpoint struct {
	mu        sync.Mutex
	forms     []url.Values
	basicID   []string
	expiresIn int
	n         atomic.Int32
}

func (te *tokenEndpoint) handler(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	id, secret, _ := r.BasicAuth()
	te.mu.Lock()
	te.forms = append(te.forms, r.PostForm)
	te.basicID = append(te.basicID, id+":"+secret)
	exp := te.expiresIn
	te.mu.Unlock()
	n := te.n.Add(1)
	writeJSONT(w, map[string]any{"access_token": "upstream-token-" + string(rune('0'+n)), "token_type": "Bearer", "expires_in": exp,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
}

func TestClientCredentials(t *testing.T) {
	ti := newTestIssuer(t)
	te := &tokenEndpoint{expiresIn: 3600}
	ti.token = te.handler
	src := NewClientCredentialsSource(context.Background(), clientcredentials.Config{
		ClientID: "gw", ClientSecret: "cc-secret", TokenURL: ti.srv.URL + "/token", Scopes: []string{"search"},
		EndpointParams: url.Values{"resource": {"https://search.internal/mcp"}},
	}, ti.srv.Client())
	for range 3 {
		h, err := src.Header(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Get("Authorization"); got != "Bearer upstream-token-1" {
			t.Fatalf("Authorization = %q", got)
		}
	}
	if te.n.Load() != 1 {
		t.Errorf("%d token requests, want 1 (reused until near expiry)", te.n.Load())
	}
	f := te.forms[0]
	if f.Get("grant_type") != "client_credentials" || f.Get("resource") != "https://search.internal/mcp" || f.Get("scope") != "search" {
		t.Errorf("token request = %v", f)
	}
	if te.basicID[0] != "gw:cc-secret" {
		t.Errorf("client authentication = %q", te.basicID[0])
	}

	// A token within the early-refresh window is replaced on next use.
	te2 := &tokenEndpoint{expiresIn: 30}
	ti.token = te2.handler
	src2 := NewClientCredentialsSource(context.Background(), clientcredentials.Config{
		ClientID: "gw", ClientSecret: "cc-secret", TokenURL: ti.srv.URL + "/token",
		EndpointParams: url.Values{"resource": {"https://search.internal/mcp"}},
	}, ti.srv.Client())
	h1, _ := src2.Header(context.Background(), nil)
	h2, err := src2.Header(context.Background(), nil)
	if err != nil || te2.n.Load() != 2 || h1.Get("Authorization") == h2.Get("Authorization") {
		t.Errorf("token expiring within %s not refreshed: %d requests, %v", earlyRefresh, te2.n.Load(), err)
	}
}

func TestTokenExchange(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	te := &tokenEndpoint{expiresIn: 600}
	ti.token = te.handler
	src := NewTokenExchangeSource(TokenExchangeConfig{
		TokenURL: ti.srv.URL + "/token", ClientID: "gw", ClientSecret: "te-secret",
		Audience: "search", Resource: "https://search.internal/mcp", Scopes: []string{"search:read", "search:write"},
	}, ti.srv.Client())
	alice := ti.rs256(ti.claims())
	p, err := rs.Authenticate(request(alice))
	if err != nil {
		t.Fatal(err)
	}
	h, err := src.Header(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("Authorization") != "Bearer upstream-token-1" || h.Get("Authorization") == "Bearer "+alice {
		t.Errorf("Authorization = %q", h.Get("Authorization"))
	}
	want := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":        {alice},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":             {"search"},
		"resource":             {"https://search.internal/mcp"},
		"scope":                {"search:read search:write"},
	}
	if got := te.forms[0].Encode(); got != want.Encode() {
		t.Errorf("exchange request:\n got %s\nwant %s", got, want.Encode())
	}
	if te.basicID[0] != "gw:te-secret" {
		t.Errorf("client authentication = %q", te.basicID[0])
	}
	// Cached per principal token.
	if _, err := src.Header(context.Background(), p); err != nil || te.n.Load() != 1 {
		t.Errorf("second call: %v, %d requests", err, te.n.Load())
	}
	c := ti.claims()
	c["sub"] = "bob"
	bob, _ := rs.Authenticate(request(ti.rs256(c)))
	hb, _ := src.Header(context.Background(), bob)
	if te.n.Load() != 2 || hb.Get("Authorization") == h.Get("Authorization") {
		t.Error("principals share an exchanged token")
	}
	// Expiry: the cache ends with the exchanged token.
	src.now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	if _, err := src.Header(context.Background(), p); err != nil || te.n.Load() != 3 {
		t.Errorf("after expiry: %v, %d requests", err, te.n.Load())
	}
	// No subject token (the catalog's session, or a principal not made by Authenticate): the gateway asks as
	// itself, by client credentials, and never makes up an exchange.
	before := len(te.forms)
	_, _ = src.Header(context.Background(), NewPrincipal(map[string]any{"sub": "x"}))
	_, _ = src.Header(context.Background(), nil)
	for _, f := range te.forms[before:] {
		if f.Get("grant_type") != "client_credentials" || f.Get("subject_token") != "" {
			t.Errorf("without a subject token the gateway sent %s; want a client_credentials request", f.Encode())
		}
	}
	if len(te.forms) == before {
		t.Error("without a subject token no client_credentials request was made")
	}
	// Errors name the OAuth error code, not the body or token.
	ti.token = func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		writeJSONT(w, map[string]any{"error": "invalid_target", "error_description": "token " + alice})
	}
	c["sub"] = "carol"
	carol, _ := rs.Authenticate(request(ti.rs256(c)))
	_, err = src.Header(context.Background(), carol)
	if err == nil || !strings.Contains(err.Error(), "invalid_target") || strings.Contains(err.Error(), alice) {
		t.Errorf("error = %v", err)
	}
}

// TestStaticSourceFiles runs in a synctest bubble: its clock is fake, so the "at most once a second" reread is
// checked on both sides of the second without waiting for one.
func TestStaticSourceFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		tokFile := filepath.Join(dir, "token")
		keyFile := filepath.Join(dir, "key")
		if err := os.WriteFile(tokFile, []byte("abc123\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, []byte("k-1"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := NewStaticSource(map[string]string{"X-Static": "v"}, map[string]string{"Authorization": tokFile, "X-Api-Key": keyFile})
		if err != nil {
			t.Fatal(err)
		}
		h, _ := s.Header(context.Background(), nil)
		if h.Get("Authorization") != "Bearer abc123" || h.Get("X-Api-Key") != "k-1" || h.Get("X-Static") != "v" {
			t.Errorf("headers = %v", h)
		}
		// Rotation: a new file content is picked up, once a second has passed since the last check.
		if err := os.WriteFile(keyFile, []byte("k-22"), 0o600); err != nil {
			t.Fatal(err)
		}
		if h, _ = s.Header(context.Background(), nil); h.Get("X-Api-Key") != "k-1" {
			t.Errorf("reread within a second of the last check: %q", h.Get("X-Api-Key"))
		}
		time.Sleep(time.Second)
		if h, _ = s.Header(context.Background(), nil); h.Get("X-Api-Key") != "k-22" {
			t.Errorf("after rotation: %q", h.Get("X-Api-Key"))
		}
		if _, err := NewStaticSource(nil, map[string]string{"X": filepath.Join(dir, "missing")}); err == nil {
			t.Error("missing file accepted")
		}
	})
}

// TestNewCredentialSource merges static headers, file headers and client
// credentials; cmd/switchboard's TestCredentialOptions checks that the config
// file's upstream block becomes these options.
func TestNewCredentialSource(t *testing.T) {
	ti := newTestIssuer(t)
	te := &tokenEndpoint{expiresIn: 3600}
	ti.token = te.handler
	dir := t.TempDir()
	f := filepath.Join(dir, "k")
	_ = os.WriteFile(f, []byte("filekey"), 0o600)
	src, err := NewCredentialSource(context.Background(), CredentialOptions{
		Upstream:    "search",
		Headers:     map[string]string{"X-Team": "blue"},
		HeaderFiles: map[string]string{"X-Api-Key": f},
		ClientCredentials: &ClientCredentialsConfig{TokenURL: ti.srv.URL + "/token", ClientID: "gw", ClientSecret: "sek",
			Resource: "https://search.internal/mcp"},
	}, ti.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	h, err := src.Header(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-Api-Key") != "filekey" || h.Get("X-Team") != "blue" || h.Get("Authorization") != "Bearer upstream-token-1" {
		t.Errorf("headers = %v", h)
	}
	if te.forms[0].Get("resource") != "https://search.internal/mcp" || te.basicID[0] != "gw:sek" {
		t.Errorf("token request %v %v", te.forms[0], te.basicID)
	}
	if src, err := NewCredentialSource(context.Background(), CredentialOptions{Upstream: "plain"}, nil); src != nil || err != nil {
		t.Errorf("upstream without credentials: %v %v", src, err)
	}
	_, err = NewCredentialSource(context.Background(), CredentialOptions{Upstream: "broken",
		HeaderFiles: map[string]string{"X-Api-Key": filepath.Join(dir, "missing")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "upstream broken") {
		t.Errorf("missing header file: %v", err)
	}
}

func TestAuditNeverLogsArgumentsOrTokens(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	tok := ti.rs256(ti.claims())
	p, err := rs.Authenticate(request(tok))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	a := NewAuditor(slog.New(slog.NewJSONHandler(&buf, nil)))
	a.Call(context.Background(), AuditEvent{Principal: p, Session: "s-1", Upstream: "files", Method: "tools/call",
		Tool: "read_file\nforged=line", Outcome: "ok", Duration: 1500 * time.Microsecond})
	a.Call(context.Background(), AuditEvent{Principal: p, Upstream: "files", Method: "tools/call", Tool: "delete_file", Outcome: "denied"})
	out := buf.String()
	if strings.Contains(out, tok) || strings.Contains(out, "groups") || strings.Contains(out, "arguments") {
		t.Errorf("audit log leaks: %s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 events, got %q", out)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"msg": "audit", "level": "INFO", "sub": "alice", "iss": ti.srv.URL, "session": "s-1", "upstream": "files",
		"method": "tools/call", "tool": "read_fileforged=line", "outcome": "ok", "duration_ms": 1.5}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("%s = %v, want %v", k, ev[k], v)
		}
	}
	if !strings.Contains(lines[1], `"level":"WARN"`) {
		t.Errorf("denied event: %s", lines[1])
	}
	var nilAuditor *Auditor
	nilAuditor.Call(context.Background(), AuditEvent{}) // no panic
}

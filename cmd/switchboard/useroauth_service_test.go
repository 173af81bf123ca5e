package main

// The service credential of a user-oauth upstream (docs/auth.md, "The service credential"; issue 31 item 5): the
// gateway's own session lists the upstream with the configured Authorization header, and a person's calls carry
// their own token, never that header. The gateway is the real one (build and run, in process), in front of a
// real Go SDK MCP server that refuses any request without a credential it knows; the identity provider is a
// small OpenID Connect issuer over HTTP that signs the clients' tokens.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// testIdP is an OpenID Connect issuer over HTTP: discovery (both well-known paths), a JWKS, and access tokens
// signed with its key. It stands for the gateway's identity provider; nothing signs in at it.
type testIdP struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func newTestIdP(t *testing.T) *testIdP {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := &testIdP{key: key}
	mux := http.NewServeMux()
	discovery := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": idp.srv.URL, "jwks_uri": idp.srv.URL + "/jwks",
			"authorization_endpoint": idp.srv.URL + "/authorize", "token_endpoint": idp.srv.URL + "/token",
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
			"id_token_signing_alg_values_supported": []string{"ES256"},
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
		})
	}
	mux.HandleFunc("/.well-known/openid-configuration", discovery)
	mux.HandleFunc("/.well-known/oauth-authorization-server", discovery)
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	idp.srv = httptest.NewServer(mux)
	t.Cleanup(idp.srv.Close)
	return idp
}

// token is an access token for sub, for the audience.
func (idp *testIdP) token(t *testing.T, sub, audience string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: idp.key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{"iss": idp.srv.URL, "sub": sub, "aud": audience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// seenRequest is one request an upstream received: its JSON-RPC method ("" for a GET or DELETE), its MCP session
// and its Authorization header.
type seenRequest struct{ method, session, authorization string }

// credentialUpstream is a Go SDK MCP server that answers only requests carrying one of the credentials it
// accepts (401 otherwise, as a real one behind OAuth does), and records every request. Its tool whoami returns
// the Authorization header its call came with.
type credentialUpstream struct {
	URL    string
	accept []string
	mu     sync.Mutex
	seen   []seenRequest
}

func newCredentialUpstream(t *testing.T, accept ...string) *credentialUpstream {
	t.Helper()
	u := &credentialUpstream{accept: accept}
	srv := mcp.NewServer(&mcp.Implementation{Name: "service-upstream", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "the credential the call came with"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.Header.Get("Authorization")}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		authz := r.Header.Get("Authorization")
		u.mu.Lock()
		u.seen = append(u.seen, seenRequest{method: msg.Method, session: r.Header.Get("Mcp-Session-Id"), authorization: authz})
		u.mu.Unlock()
		if !slices.Contains(u.accept, authz) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	u.URL = hs.URL + "/mcp"
	return u
}

func (u *credentialUpstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// testTokenKeys is an auth.tokenKeys value with one fresh key.
func testTokenKeys(t *testing.T) string {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return "k1:" + base64.StdEncoding.EncodeToString(k)
}

// connectAs opens a Go SDK client session to the gateway with token.
func connectAs(ctx context.Context, t *testing.T, mcpURL, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "service-credential-test", Version: "0"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   mcpURL,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolText(res *mcp.CallToolResult) string {
	var b bytes.Buffer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestUserOAuthServiceCredential(t *testing.T) {
	const (
		service     = "Bearer service-secret"
		aliceToken  = "alice-upstream-token"
		upstreamKey = "svc"
	)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure guard; nothing is timed against it
	defer cancel()
	idp := newTestIdP(t)
	up := newCredentialUpstream(t, service, "Bearer "+aliceToken)
	const publicURL = "http://127.0.0.1:1"
	audience := publicURL + "/mcp"
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.yaml")
	cfgText := fmt.Sprintf(`listen: 127.0.0.1:0
publicURL: %s
auth:
  issuer: %s
  audience: %s
  browser: {clientId: switchboard-web, clientSecret: web-secret}
  tokenKeys: "%s"
upstreams:
  - name: %s
    url: %s
    headers: {Authorization: "%s"}
    auth: {type: user-oauth, clientId: sb}
`, publicURL, idp.srv.URL, audience, testTokenKeys(t), upstreamKey, up.URL, service)
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log, level := newLogger(cfg.Log, io.Discard)
	g, err := build(ctx, cfg, serveFlags{path: path, grace: time.Second}, log, level)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.run(runCtx) }()
	defer func() { stop(); <-done }()
	if err := g.router.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	// alice has connected her account: her grant is in the store, sealed as the connect page seals it.
	alice := idp.srv.URL + "|alice"
	plain, _ := json.Marshal(map[string]any{"accessToken": aliceToken, "tokenType": "Bearer", "obtained": time.Now()})
	sealed, err := g.users.sealer.Seal(plain, []byte(alice+"\x00"+upstreamKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.users.store.PutGrant(ctx, alice, upstreamKey, sealed); err != nil {
		t.Fatal(err)
	}

	mcpURL := "http://" + g.ln.Addr().String() + "/mcp"
	tool := upstreamKey + "__whoami"
	for _, person := range []string{"alice", "bob"} {
		cs := connectAs(ctx, t, mcpURL, idp.token(t, person, audience))
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("%s's tools/list: %v", person, err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, []string{tool}) {
			t.Fatalf("%s's tools/list = %q; want the upstream's %s, listed with the service credential", person, names, tool)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
		switch {
		case person == "alice" && (err != nil || res.IsError || toolText(res) != "Bearer "+aliceToken):
			t.Errorf("alice's call: %v %+v; want the upstream to see her own token", err, res)
		case person == "bob" && err == nil && !res.IsError:
			t.Errorf("bob, not connected, called the upstream: it saw %q", toolText(res))
		}
	}

	// What the upstream saw: the service credential lists, and never calls; each upstream session carries one
	// credential from its first request to its last, so a person's session never carries the service
	// credential and the gateway's own never carries a person's token.
	seen := up.requests()
	bySession := map[string]string{}
	listed := false
	for _, r := range seen {
		switch {
		case r.authorization != service && r.authorization != "Bearer "+aliceToken:
			t.Errorf("the upstream got %s with Authorization %q", cmp.Or(r.method, "a request"), r.authorization)
		case r.method == "tools/call" && r.authorization != "Bearer "+aliceToken:
			t.Errorf("tools/call went upstream with Authorization %q; want only alice's own token", r.authorization)
		case r.method == "tools/list" && r.authorization == service:
			listed = true
		}
		if r.session == "" {
			continue
		}
		if prev, ok := bySession[r.session]; ok && prev != r.authorization {
			t.Errorf("upstream session %s carried %q, then %q", r.session, prev, r.authorization)
		}
		bySession[r.session] = r.authorization
	}
	if !listed {
		t.Errorf("no tools/list reached the upstream with the service credential; requests: %+v", seen)
	}
}

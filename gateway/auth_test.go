package gateway_test

// Authentication, policy, upstream credentials and audit through the real front end (docs/auth.md): a real
// issuer over HTTP (discovery, JWKS and a token endpoint, tokens signed with go-jose), the gateway built the way
// cmd/switchboard's wireAuth builds it (auth.NewResourceServer + auth.NewPolicy + an Identify func), upstreams
// that are SDK servers over streamable HTTP recording the headers they receive, and Go SDK clients whose
// http.Client adds "Authorization: Bearer …".

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// ---------------------------------------------------------------------------------------------------------------
// The issuer: OIDC discovery, a JWKS, and a token endpoint doing client credentials and token exchange.

const (
	ccClientID     = "switchboard"
	ccClientSecret = "gw-s3cret"
)

type authIssuer struct {
	t      *testing.T
	srv    *httptest.Server
	key    *rsa.PrivateKey
	other  *rsa.PrivateKey // a key the JWKS does not publish
	ccSeq  atomic.Int32
	mu     sync.Mutex
	tokens []tokenReq // every token request, as received
}

// tokenReq is one token request's form, and whether its Basic credentials were right.
type tokenReq struct {
	form      map[string]string
	basicAuth bool
}

func newAuthIssuer(t *testing.T) *authIssuer {
	t.Helper()
	ai := &authIssuer{t: t}
	var err error
	if ai.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if ai.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		authJSON(w, http.StatusOK, map[string]any{
			"issuer":                                ai.srv.URL,
			"jwks_uri":                              ai.srv.URL + "/jwks",
			"token_endpoint":                        ai.srv.URL + "/token",
			"authorization_endpoint":                ai.srv.URL + "/authorize",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		authJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ai.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/token", ai.token)
	ai.srv = httptest.NewServer(mux)
	t.Cleanup(ai.srv.Close)
	return ai
}

func authJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// exchangedFor is the token the exchange endpoint issues for a subject token: derived from it, so each user (and
// each of a user's tokens) gets its own.
func exchangedFor(subjectToken string) string {
	sum := sha256.Sum256([]byte(subjectToken))
	return "xchg-" + hex.EncodeToString(sum[:8])
}

func (ai *authIssuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		authJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	rec := tokenReq{form: map[string]string{}, basicAuth: ok && id == ccClientID && secret == ccClientSecret}
	for k := range r.PostForm {
		rec.form[k] = r.PostForm.Get(k)
	}
	ai.mu.Lock()
	ai.tokens = append(ai.tokens, rec)
	ai.mu.Unlock()
	if !rec.basicAuth {
		authJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "client_credentials":
		authJSON(w, http.StatusOK, map[string]any{
			"access_token": fmt.Sprintf("cc-token-%d", ai.ccSeq.Add(1)), "token_type": "Bearer", "expires_in": 3600,
		})
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		sub := r.PostForm.Get("subject_token")
		if _, err := jose.ParseSignedCompact(sub, []jose.SignatureAlgorithm{jose.RS256}); err != nil {
			authJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		authJSON(w, http.StatusOK, map[string]any{
			"access_token": exchangedFor(sub), "token_type": "Bearer", "expires_in": 3600,
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		})
	default:
		authJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	}
}

func (ai *authIssuer) tokenRequests() []tokenReq {
	ai.mu.Lock()
	defer ai.mu.Unlock()
	return slices.Clone(ai.tokens)
}

// claims are valid claims for user sub of group, for the audience, to be modified.
func (ai *authIssuer) claims(audience, sub, group string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": ai.srv.URL, "sub": sub, "aud": audience,
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"scope": "mcp profile", "groups": []string{group},
		"email": sub + "@corp.example", "jti": fmt.Sprintf("jti-%s-%d", sub, now.UnixNano()),
	}
}

func (ai *authIssuer) signWith(key *rsa.PrivateKey, claims map[string]any) string {
	ai.t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		ai.t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		ai.t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		ai.t.Fatal(err)
	}
	return out
}

func (ai *authIssuer) sign(claims map[string]any) string { return ai.signWith(ai.key, claims) }

// ---------------------------------------------------------------------------------------------------------------
// Upstreams that record what they receive.

// seenHeaders records the Authorization and X-Api-Key headers of every HTTP request an upstream received.
type seenHeaders struct {
	mu   sync.Mutex
	auth []string
	key  []string
}

func (s *seenHeaders) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = append(s.auth, strings.Join(r.Header.Values("Authorization"), " | "))
	s.key = append(s.key, r.Header.Get("X-Api-Key"))
}

func (s *seenHeaders) authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auth)
}

func (s *seenHeaders) apiKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.key)
}

// authUpstream is an SDK server offering tools, resources and prompts, over streamable HTTP; its tools answer
// "<upstream>:<tool>:<text>" and "whosent" answers the Authorization header its request carried.
type authUpstream struct {
	name string
	url  string
	seen *seenHeaders
}

type authEchoIn struct {
	Text string `json:"text,omitempty"`
}

func startAuthUpstream(t *testing.T, name string, tools, resources, prompts []string) *authUpstream {
	t.Helper()
	return startAuthUpstreamWith(t, name, nil, tools, resources, prompts)
}

// startAuthUpstreamWith is startAuthUpstream with the SDK handler's options (Stateless: a 2026-07-28 upstream).
func startAuthUpstreamWith(t *testing.T, name string, opts *mcp.StreamableHTTPOptions, tools, resources, prompts []string) *authUpstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	for _, tool := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: tool, Description: tool + " of " + name}, func(ctx context.Context, req *mcp.CallToolRequest, in authEchoIn) (*mcp.CallToolResult, any, error) {
			switch tool {
			case "fail":
				return nil, nil, &jsonrpc.Error{Code: -32050, Message: "upstream failure"}
			case "iserror":
				return nil, nil, errors.New("tool failure")
			}
			text := name + ":" + tool + ":" + in.Text
			if tool == "whosent" {
				text = req.Extra.Header.Get("Authorization")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	}
	for _, uri := range resources {
		read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "content of " + req.Params.URI}}}, nil
		}
		if strings.Contains(uri, "{") { // a template
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uri, Name: uri, MIMEType: "text/plain"}, read)
			continue
		}
		s.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, read)
	}
	for _, p := range prompts {
		s.AddPrompt(&mcp.Prompt{Name: p}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name + " prompt " + p}}}}, nil
		})
	}
	seen := &seenHeaders{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return &authUpstream{name: name, url: ts.URL, seen: seen}
}

// testUpstream is an HTTP upstream as cmd/switchboard's config gives it: its name, URL and credentials.
type testUpstream struct {
	Name, URL         string
	Headers           map[string]string
	ClientCredentials *auth.ClientCredentialsConfig
	TokenExchange     *auth.TokenExchangeConfig
}

// routingUpstream builds the routing config of an HTTP upstream the way cmd/switchboard's upstreamConfigs does:
// the credential source from the upstream's config, its headers added to every request.
func routingUpstream(t *testing.T, u testUpstream) routing.UpstreamConfig {
	t.Helper()
	return routingUpstreamWith(t, u, false)
}

// routingUpstreamWith is routingUpstream; anonymousCatalog sends no credentials on requests without a principal
// (the catalog link), working around the missing catalog of token-exchange upstreams (see
// TestAuthUpstreamTokenExchange) so that another behaviour can be tested in isolation.
func routingUpstreamWith(t *testing.T, u testUpstream, anonymousCatalog bool) routing.UpstreamConfig {
	t.Helper()
	spec := upstream.Spec{Name: u.Name, URL: u.URL, Logger: testLogger()}
	src, err := auth.NewCredentialSource(context.Background(), auth.CredentialOptions{
		Upstream: u.Name, Headers: u.Headers, ClientCredentials: u.ClientCredentials, TokenExchange: u.TokenExchange}, nil)
	if err != nil {
		t.Fatalf("upstream %s: %v", u.Name, err)
	}
	if src != nil {
		spec.RequestHeaders = func(ctx context.Context, h http.Header) error {
			if anonymousCatalog && auth.PrincipalFrom(ctx) == nil {
				return nil
			}
			creds, err := src.Header(ctx, auth.PrincipalFrom(ctx))
			if err != nil {
				return err
			}
			for k, v := range creds {
				h[k] = v
			}
			return nil
		}
	}
	tr, err := upstream.NewTransport(spec)
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: u.Name, Prefix: u.Name + "__", Mode: routing.PerClient, Transport: tr, Kind: "http",
		Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}}
}

// ---------------------------------------------------------------------------------------------------------------
// The gateway, wired like cmd/switchboard's wireAuth.

type authGateway struct {
	base     string // http://127.0.0.1:PORT
	mcpURL   string
	audience string
	r        *routing.Router
	audit    *syncBuffer
}

// syncBuffer is a goroutine-safe log sink that tells waiters about each write (next).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// changed is closed by the next Write; nil while nobody waits.
	changed chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// next returns a channel closed by the next Write.
func (s *syncBuffer) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// events returns the JSON log records whose msg is "audit".
func (s *syncBuffer) events(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit log line is not JSON: %v: %s", err, sc.Text())
		}
		if m["msg"] == "audit" {
			out = append(out, m)
		}
	}
	return out
}

// waitAudit waits until the audit events satisfy cond, waking on each write to the audit log, and returns them;
// the wait is bounded by guard.
func (g *authGateway) waitAudit(t *testing.T, what string, cond func([]map[string]any) bool) []map[string]any {
	t.Helper()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	for {
		next := g.audit.next() // before the check: a write between the two still wakes the select
		if events := g.audit.events(t); cond(events) {
			return events
		}
		select {
		case <-next:
		case <-timer.C:
			t.Fatalf("gave up waiting for %s after %s; audit events: %v", what, guard, g.audit.events(t))
		}
	}
}

type authGatewayOptions struct {
	policy   []auth.PolicyRule
	pageSize int
	gwLog    io.Writer // the gateway's own log (resource server included); nil = discarded
	// allowOrigin is the gateway's AllowOrigin (cmd/switchboard always sets one); nil = none.
	allowOrigin func(string) bool
	// endpoints are served at /mcp/<name>, each a resource of its own (ResourceServer.ForEndpoint).
	endpoints []routing.Endpoint
}

func startAuthGateway(t *testing.T, ai *authIssuer, o authGatewayOptions, ups ...routing.UpstreamConfig) *authGateway {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	g := &authGateway{base: base, mcpURL: base + "/mcp", audience: base + "/mcp", audit: &syncBuffer{}}
	gwLog := testLogger()
	if o.gwLog != nil {
		gwLog = slog.New(slog.NewTextHandler(o.gwLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	// cmd/switchboard's wireAuth.
	rs, err := auth.NewResourceServer(context.Background(), auth.ResourceConfig{
		Issuer: ai.srv.URL, Audience: g.audience, Scopes: []string{"mcp"}, ClockSkew: 30 * time.Second, Logger: gwLog,
	}, nil)
	if err != nil {
		t.Fatalf("NewResourceServer: %v", err)
	}
	pol, err := auth.NewPolicy(o.policy)
	if err != nil {
		t.Fatalf("NewPolicy: %v", err)
	}
	identify := func(ctx context.Context) gateway.Identity {
		p := auth.PrincipalFrom(ctx)
		if p == nil {
			return gateway.Identity{}
		}
		id := gateway.Identity{Key: p.Key(), Context: func(c context.Context) context.Context { return auth.WithPrincipal(c, p) }}
		if gr := pol.For(p); gr != nil {
			id.Allow = gr.Allows
		}
		return id
	}
	// cmd/switchboard's auditor, writing JSON to a buffer.
	auditor := auth.NewAuditor(slog.New(slog.NewJSONHandler(g.audit, nil)).With("component", "audit"))
	audit := func(e routing.CallEvent) {
		var p *auth.Principal
		if iss, sub, ok := strings.Cut(e.Principal, "|"); ok {
			p = &auth.Principal{Issuer: iss, Subject: sub}
		}
		auditor.Call(context.Background(), auth.AuditEvent{
			Principal: p, Session: e.Session, Upstream: e.Upstream, Method: e.Method, Tool: e.Tool,
			Outcome: e.Outcome, Code: e.Code, Duration: e.Duration,
		})
	}

	r, err := routing.New(routing.Options{Logger: gwLog, PageSize: o.pageSize, Audit: audit, Shape: routing.Shape{Endpoints: o.endpoints}}, ups)
	if err != nil {
		t.Fatal(err)
	}
	g.r = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	authFor := func(name string) gateway.Authenticator { // cmd/switchboard's, as wireAuth sets it
		if e := rs.ForEndpoint(name); e != nil {
			return e
		}
		return nil
	}
	ts.Config.Handler = gateway.New(r, gateway.Options{Logger: gwLog, Auth: rs, AuthFor: authFor, Identify: identify, AllowOrigin: o.allowOrigin}).Handler()
	ts.Start()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(guard):
			t.Errorf("router did not stop within %s", guard)
		}
		ts.CloseClientConnections()
		ts.Close()
	})
	wctx, wcancel := context.WithTimeout(context.Background(), guard)
	defer wcancel()
	if err := r.WaitReady(wctx); err != nil {
		t.Fatalf("gateway not ready: %v", err)
	}
	return g
}

// bearer is an http.RoundTripper adding "Authorization: Bearer <token>"; the token can change (a refresh).
type bearer struct {
	token atomic.Pointer[string]
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if tok := b.token.Load(); tok != nil {
		r.Header.Set("Authorization", "Bearer "+*tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func newBearer(token string) *bearer {
	b := &bearer{}
	b.token.Store(&token)
	return b
}

// connectAs opens an SDK client session to the gateway with the token.
func (g *authGateway) connectAs(t *testing.T, name string, b *bearer) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.mcpURL, HTTPClient: &http.Client{Transport: b}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("client %s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// send makes one raw HTTP request to the gateway; token "" sends none.
func (g *authGateway) send(t *testing.T, method, path, token, session, body string) rawResp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxGuard(t), method, g.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", legacyVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	return readResp(t, resp)
}

const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initSession starts a session over raw HTTP as the token's principal and returns its id.
func (g *authGateway) initSession(t *testing.T, token string) string {
	t.Helper()
	r := g.send(t, http.MethodPost, "/mcp", token, "", initBody)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: HTTP %d: %s", r.status, r.body)
	}
	id := r.header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	if a := g.send(t, http.MethodPost, "/mcp", token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != http.StatusAccepted {
		t.Fatalf("initialized: HTTP %d: %s", a.status, a.body)
	}
	return id
}

// listAll pages through tools/list, returning every name and the number of pages.
func listAllTools(t *testing.T, cs *mcp.ClientSession) (names []string, pages int) {
	t.Helper()
	cursor := ""
	for pages = 1; pages < 100; pages++ {
		res, err := cs.ListTools(ctxGuard(t), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tools/list page %d: %v", pages, err)
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			slices.Sort(names)
			return names, pages
		}
		cursor = res.NextCursor
	}
	t.Fatal("tools/list: more than 100 pages")
	return nil, 0
}

// ---------------------------------------------------------------------------------------------------------------
// Tests.

// TestAuthChallenges: what an unauthenticated or wrongly authenticated client gets, and the metadata that lets a
// client find the authorization server starting from the gateway's URL alone.
func TestAuthChallenges(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo"}, nil, nil)
	var gwLog syncBuffer
	g := startAuthGateway(t, ai, authGatewayOptions{gwLog: &gwLog}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	prm := g.base + "/.well-known/oauth-protected-resource/mcp"

	// No token: 401 with the challenge naming the metadata and the scope, on every MCP endpoint and method.
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/mcp", initBody},
		{http.MethodGet, "/mcp", ""},
		{http.MethodDelete, "/mcp", ""},
		{http.MethodGet, "/sse", ""},
		{http.MethodPost, "/message?sessionId=x", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{http.MethodPost, "/messages?sessionId=x", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	} {
		r := g.send(t, c.method, c.path, "", "", c.body)
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: HTTP %d, want 401: %s", c.method, c.path, r.status, r.body)
			continue
		}
		want := `Bearer resource_metadata="` + prm + `", scope="mcp"`
		if got := r.header.Get("WWW-Authenticate"); got != want {
			t.Errorf("%s %s: WWW-Authenticate = %q, want %q", c.method, c.path, got, want)
		}
		if m := r.final(t); m.Error == nil || m.Error.Code != auth.CodeUnauthorized || string(m.ID) != "null" {
			t.Errorf("%s %s: body %s, want a JSON-RPC error %d with id null", c.method, c.path, r.body, auth.CodeUnauthorized)
		}
	}
	// Another scheme is no bearer token.
	req, _ := http.NewRequest(http.MethodPost, g.mcpURL, strings.NewReader(initBody))
	req.Header.Set("Authorization", "Basic YWxpY2U6cHc=")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 401 || strings.Contains(resp.Header.Get("WWW-Authenticate"), "error=") {
			t.Errorf("Basic credentials: HTTP %d %q, want 401 without error=", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// RFC 9728 §3.3: a document names the resource whose path its URL was built from, so the root form (the
	// resource https://host) is not served for a resource at /mcp.
	if resp, err := http.Get(g.base + "/.well-known/oauth-protected-resource"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET the root metadata of a resource at /mcp: %v %v, want 404", resp.Status, err)
	} else {
		resp.Body.Close()
	}
	// The protected-resource metadata, at the path the challenge announces, without a token.
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp"} {
		resp, err := http.Get(g.base + path)
		if err != nil {
			t.Fatal(err)
		}
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET %s: HTTP %d %s: %v", path, resp.StatusCode, resp.Header.Get("Content-Type"), err)
		}
		if md.Resource != g.audience || !slices.Equal(md.AuthorizationServers, []string{ai.srv.URL}) ||
			!slices.Equal(md.ScopesSupported, []string{"mcp"}) || !slices.Equal(md.BearerMethods, []string{"header"}) {
			t.Errorf("GET %s: %+v, want resource %s and authorization server %s", path, md, g.audience, ai.srv.URL)
		}
	}

	// Rejected tokens: 401 invalid_token. Missing scope: 403 insufficient_scope.
	good := ai.claims(g.audience, "alice", "eng")
	with := func(k string, v any) map[string]any {
		c := ai.claims(g.audience, "alice", "eng")
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	invalidHdr := `Bearer error="invalid_token", resource_metadata="` + prm + `", scope="mcp", error_description="The access token is invalid or expired."`
	cases := []struct {
		name   string
		token  string
		status int
		header string
	}{
		{"garbage", "not-a-jwt", 401, invalidHdr},
		{"unknown key", ai.signWith(ai.other, good), 401, invalidHdr},
		{"tampered", tamper(ai.sign(good)), 401, invalidHdr},
		{"expired", ai.sign(with("exp", time.Now().Add(-time.Hour).Unix())), 401, invalidHdr},
		{"wrong audience", ai.sign(with("aud", "https://other.example.com/mcp")), 401, invalidHdr},
		{"audience with a trailing slash", ai.sign(with("aud", g.audience+"/")), 401, invalidHdr},
		{"wrong issuer", ai.sign(with("iss", "https://evil.example.com")), 401, invalidHdr},
		{"no sub", ai.sign(with("sub", nil)), 401, invalidHdr},
		{"missing scope", ai.sign(with("scope", "profile email")), 403,
			`Bearer error="insufficient_scope", resource_metadata="` + prm + `", scope="mcp", error_description="The access token lacks a required scope."`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/mcp", "/sse"} {
				method, body := http.MethodPost, initBody
				if path == "/sse" {
					method, body = http.MethodGet, ""
				}
				r := g.send(t, method, path, c.token, "", body)
				if r.status != c.status {
					t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, r.status, c.status, r.body)
				}
				if got := r.header.Get("WWW-Authenticate"); got != c.header {
					t.Errorf("WWW-Authenticate = %q, want %q", got, c.header)
				}
				// Nothing of the token or its claims comes back.
				all := string(r.body) + fmt.Sprint(r.header)
				for _, secret := range []string{c.token, "alice", "corp.example", "jti-", "profile"} {
					if strings.Contains(all, secret) {
						t.Errorf("the %d answer leaks %q: %s", r.status, secret, all)
					}
				}
				if r.header.Get("Mcp-Session-Id") != "" {
					t.Errorf("a refused initialize started a session")
				}
			}
		})
	}
	// The gateway's log says why, but never holds a token.
	logText := gwLog.String()
	if !strings.Contains(logText, "request refused") {
		t.Errorf("the refusals were not logged:\n%s", logText)
	}
	for _, c := range cases {
		if strings.Contains(logText, c.token) {
			t.Errorf("the gateway log holds the %s token", c.name)
		}
	}
}

// tamper changes the payload of a JWT, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	parts[1] = strings.TrimRight(parts[1], "A") + "B"
	return strings.Join(parts, ".")
}

// TestAuthValidToken: with a valid token the SDK client initializes, lists and calls.
func TestAuthValidToken(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo", "read"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	tok := ai.sign(ai.claims(g.audience, "alice", "eng"))
	cs := g.connectAs(t, "alice", newBearer(tok))
	names, _ := listAllTools(t, cs)
	if !slices.Equal(names, []string{"files__echo", "files__read"}) {
		t.Errorf("tools/list = %v", names)
	}
	if got := call(t, cs, "files__echo", map[string]any{"text": "hi"}); got != "files:echo:hi" {
		t.Errorf("files__echo = %q", got)
	}
	// The upstream never saw the client's token (it has no credentials configured: no Authorization at all).
	for _, a := range up.seen.authorizations() {
		if a != "" {
			t.Errorf("the upstream received Authorization %q", a)
		}
	}
}

// TestAuthTokenNeverForwarded: "a client's token never leaves the gateway". Through every front end (streamable
// HTTP, a 2025-03-26 batch, 2026-07-28, HTTP+SSE) and to every kind of upstream (shared, per-client, stateless
// 2026-07-28), the upstreams, which have no credentials configured, receive no Authorization header at all.
func TestAuthTokenNeverForwarded(t *testing.T) {
	ai := newAuthIssuer(t)
	shared := startAuthUpstream(t, "shared", []string{"echo"}, nil, nil)
	perClient := startAuthUpstream(t, "own", []string{"echo"}, nil, nil)
	stateless := startAuthUpstreamWith(t, "modern", &mcp.StreamableHTTPOptions{Stateless: true}, []string{"echo"}, nil, nil)
	sharedCfg := routingUpstream(t, testUpstream{Name: "shared", URL: shared.url})
	sharedCfg.Mode = routing.Shared
	g := startAuthGateway(t, ai, authGatewayOptions{}, sharedCfg,
		routingUpstream(t, testUpstream{Name: "own", URL: perClient.url}),
		routingUpstream(t, testUpstream{Name: "modern", URL: stateless.url}))
	tok := ai.sign(ai.claims(g.audience, "alice", "eng"))
	tools := []string{"shared__echo", "own__echo", "modern__echo"}
	want := func(t *testing.T, tool string, got string) {
		t.Helper()
		if prefix, _, _ := strings.Cut(tool, "__"); got != prefix+":echo:x" {
			t.Errorf("%s answered %q", tool, got)
		}
	}

	t.Run("streamable HTTP", func(t *testing.T) {
		cs := g.connectAs(t, "sdk", newBearer(tok))
		for _, tool := range tools {
			want(t, tool, call(t, cs, tool, map[string]any{"text": "x"}))
		}
	})
	rc := &rawClient{t: t, url: g.mcpURL, hc: &http.Client{Transport: newBearer(tok)}}
	callBody := func(id int, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"x"}}}`, id, tool)
	}
	resultOf := func(t *testing.T, m rpcMsg) string {
		t.Helper()
		var res mcp.CallToolResult
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
			t.Fatalf("not a tools/call result: %+v %s", m.Error, m.Result)
		}
		return resultText(&res)
	}
	t.Run("2025-03-26 batch", func(t *testing.T) {
		b := *rc
		b.t = t
		b.initialize("2025-03-26")
		parts := make([]string, len(tools))
		for i, tool := range tools {
			parts[i] = callBody(i+1, tool)
		}
		r := b.do("["+strings.Join(parts, ",")+"]", nil)
		if r.status != http.StatusOK || len(r.msgs) != len(tools) {
			t.Fatalf("batch: HTTP %d %s", r.status, r.body)
		}
		for _, raw := range r.msgs {
			m := decodeMsg(t, raw)
			var id int
			_ = json.Unmarshal(m.ID, &id)
			if id >= 1 && id <= len(tools) {
				want(t, tools[id-1], resultOf(t, m))
			}
		}
	})
	t.Run("2026-07-28", func(t *testing.T) {
		m := *rc
		m.t = t
		for i, tool := range tools {
			body := modernBody(t, i+1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "x"}}, `{}`)
			r := modernDo(t, &m, body, nil)
			if r.status != http.StatusOK {
				t.Fatalf("%s: HTTP %d %s", tool, r.status, r.body)
			}
			want(t, tool, resultOf(t, r.final(t)))
		}
	})
	t.Run("HTTP+SSE", func(t *testing.T) {
		lc := openLegacy(t, g.base, map[string]string{"Authorization": "Bearer " + tok})
		if r := lc.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}`, nil); r.status != http.StatusAccepted {
			t.Fatalf("initialize: HTTP %d %s", r.status, r.body)
		}
		lc.next()
		lc.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		for i, tool := range tools {
			if r := lc.post(callBody(i+1, tool), nil); r.status != http.StatusAccepted {
				t.Fatalf("%s: HTTP %d %s", tool, r.status, r.body)
			}
			want(t, tool, resultOf(t, decodeMsg(t, []byte(lc.next()[1]))))
		}
	})

	for _, up := range []*authUpstream{shared, perClient, stateless} {
		auths := up.seen.authorizations()
		if len(auths) == 0 {
			t.Errorf("upstream %s received no request", up.name)
		}
		for _, a := range auths {
			if a != "" {
				t.Errorf("upstream %s received Authorization %q (the client's token: %v)", up.name, a, strings.Contains(a, tok))
			}
		}
	}
}

// TestAuthSessionBinding: a session id is not a credential. Another principal presenting it gets 404, exactly as
// for a session that does not exist, on every method and on the legacy endpoint; the owner keeps working.
func TestAuthSessionBinding(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	tokA := ai.sign(ai.claims(g.audience, "alice", "eng"))
	tokB := ai.sign(ai.claims(g.audience, "bob", "eng"))
	// Same subject from another issuer would be another principal; same issuer, other subject here.
	sessA := g.initSession(t, tokA)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	unknown := g.send(t, http.MethodPost, "/mcp", tokB, "0123456789abcdef0123456789abcdef", list)
	if unknown.status != http.StatusNotFound {
		t.Fatalf("unknown session: HTTP %d", unknown.status)
	}
	for _, c := range []struct{ method, body string }{
		{http.MethodPost, list},
		{http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"files__echo","arguments":{"text":"x"}}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		r := g.send(t, c.method, "/mcp", tokB, sessA, c.body)
		if r.status != http.StatusNotFound {
			t.Errorf("B %s with A's session: HTTP %d, want 404: %s", c.method, r.status, r.body)
			continue
		}
		if !bytes.Equal(r.body, unknown.body) {
			t.Errorf("B %s with A's session: body %s differs from an unknown session's %s", c.method, r.body, unknown.body)
		}
	}
	// A's session survived B's DELETE, and A still works.
	r := g.send(t, http.MethodPost, "/mcp", tokA, sessA, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"files__echo","arguments":{"text":"still"}}}`)
	if r.status != 200 || !strings.Contains(string(r.body), "files:echo:still") {
		t.Fatalf("A after B's attempts: HTTP %d: %s", r.status, r.body)
	}
	// A refreshed token of the same principal keeps the session.
	tokA2 := ai.sign(ai.claims(g.audience, "alice", "eng"))
	if r := g.send(t, http.MethodPost, "/mcp", tokA2, sessA, list); r.status != 200 {
		t.Fatalf("A with a new token: HTTP %d: %s", r.status, r.body)
	}

	// The legacy HTTP+SSE transport: A opens /sse; B posting to A's endpoint gets 404, A gets 202 and its answer.
	lc := openLegacy(t, g.base, map[string]string{"Authorization": "Bearer " + tokA})
	legacyInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}`
	asB := map[string]string{"Authorization": "Bearer " + tokB}
	if r := lc.post(legacyInit, asB); r.status != http.StatusNotFound {
		t.Errorf("B POST %s: HTTP %d, want 404: %s", lc.endpoint, r.status, r.body)
	}
	if r := lc.post(legacyInit, nil); r.status != http.StatusAccepted {
		t.Fatalf("A POST %s: HTTP %d: %s", lc.endpoint, r.status, r.body)
	}
	if e := lc.next(); !strings.Contains(e[1], `"id":1`) || !strings.Contains(e[1], "protocolVersion") {
		t.Fatalf("A's initialize answer on /sse = %v", e)
	}
	// B after A's initialize: still 404.
	if r := lc.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, asB); r.status != http.StatusNotFound {
		t.Errorf("B POST %s after A's initialize: HTTP %d, want 404", lc.endpoint, r.status)
	}
}

// TestAuthPolicy: two users of different groups see different catalogs (paged with a small page size over the
// filtered lists), and what a user may not use answers exactly as what does not exist.
func TestAuthPolicy(t *testing.T) {
	ai := newAuthIssuer(t)
	alpha := startAuthUpstream(t, "alpha", []string{"a1", "a2", "a3", "a4", "a5", "a6"},
		[]string{"alpha://public/1", "alpha://public/2", "alpha://secret/1", "alpha://item/{id}"}, []string{"p_public", "p_secret"})
	beta := startAuthUpstream(t, "beta", []string{"b1", "b2", "b3", "b4"}, []string{"beta://doc"}, []string{"bp"})
	policy := []auth.PolicyRule{
		{Name: "engineers", Match: auth.PolicyMatch{Groups: []string{"eng"}},
			Allow: []string{"alpha/*"}, Deny: []string{"alpha/a6", "alpha/alpha://secret/*", "alpha/p_secret", "alpha/alpha://item/2"}},
		{Name: "operators", Match: auth.PolicyMatch{Groups: []string{"ops"}},
			Allow: []string{"beta", "alpha/a1"}},
	}
	g := startAuthGateway(t, ai, authGatewayOptions{policy: policy, pageSize: 2},
		routingUpstream(t, testUpstream{Name: "alpha", URL: alpha.url}),
		routingUpstream(t, testUpstream{Name: "beta", URL: beta.url}))
	eng := g.connectAs(t, "eng", newBearer(ai.sign(ai.claims(g.audience, "erin", "eng"))))
	ops := g.connectAs(t, "ops", newBearer(ai.sign(ai.claims(g.audience, "oscar", "ops"))))
	outsider := g.connectAs(t, "outsider", newBearer(ai.sign(ai.claims(g.audience, "olga", "sales"))))

	engTools, engPages := listAllTools(t, eng)
	if want := []string{"alpha__a1", "alpha__a2", "alpha__a3", "alpha__a4", "alpha__a5"}; !slices.Equal(engTools, want) {
		t.Errorf("eng tools/list = %v, want %v", engTools, want)
	}
	if engPages != 3 {
		t.Errorf("eng tools/list took %d pages of 2, want 3", engPages)
	}
	opsTools, opsPages := listAllTools(t, ops)
	if want := []string{"alpha__a1", "beta__b1", "beta__b2", "beta__b3", "beta__b4"}; !slices.Equal(opsTools, want) {
		t.Errorf("ops tools/list = %v, want %v", opsTools, want)
	}
	if opsPages != 3 {
		t.Errorf("ops tools/list took %d pages of 2, want 3", opsPages)
	}
	if names, _ := listAllTools(t, outsider); len(names) != 0 {
		t.Errorf("a user no rule applies to sees %v", names)
	}

	// Allowed calls work.
	if got := call(t, eng, "alpha__a2", map[string]any{"text": "x"}); got != "alpha:a2:x" {
		t.Errorf("eng alpha__a2 = %q", got)
	}
	if got := call(t, ops, "beta__b3", map[string]any{"text": "y"}); got != "beta:b3:y" {
		t.Errorf("ops beta__b3 = %q", got)
	}
	if got := call(t, ops, "alpha__a1", map[string]any{"text": "z"}); got != "alpha:a1:z" {
		t.Errorf("ops alpha__a1 = %q", got)
	}

	// A hidden tool answers as a nonexistent one: same code, same message but for the name.
	callErr := func(cs *mcp.ClientSession, name string) string {
		t.Helper()
		_, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil {
			t.Fatalf("call %s succeeded", name)
		}
		we := wireError(t, err)
		return fmt.Sprintf("%d %s", we.Code, strings.ReplaceAll(we.Message, name, "NAME"))
	}
	for _, c := range []struct {
		cs    *mcp.ClientSession
		who   string
		names []string
	}{
		{eng, "eng", []string{"beta__b1", "alpha__a6"}},
		{ops, "ops", []string{"alpha__a2", "alpha__a6"}},
		{outsider, "outsider", []string{"alpha__a1", "beta__b1"}},
	} {
		want := callErr(c.cs, "nope__nothing")
		for _, n := range c.names {
			if got := callErr(c.cs, n); got != want {
				t.Errorf("%s calling hidden %s: %q, want the unknown-tool answer %q", c.who, n, got, want)
			}
		}
	}

	// Resources: listed and read only where allowed; a hidden resource reads as not found.
	listURIs := func(cs *mcp.ClientSession) []string {
		var uris []string
		cursor := ""
		for range 20 {
			res, err := cs.ListResources(ctxGuard(t), &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			for _, r := range res.Resources {
				uris = append(uris, r.URI)
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		slices.Sort(uris)
		return uris
	}
	if got, want := listURIs(eng), []string{"alpha://public/1", "alpha://public/2"}; !slices.Equal(got, want) {
		t.Errorf("eng resources/list = %v, want %v", got, want)
	}
	if got, want := listURIs(ops), []string{"beta://doc"}; !slices.Equal(got, want) {
		t.Errorf("ops resources/list = %v, want %v", got, want)
	}
	readErr := func(cs *mcp.ClientSession, uri string) string {
		t.Helper()
		_, err := cs.ReadResource(ctxGuard(t), &mcp.ReadResourceParams{URI: uri})
		if err == nil {
			t.Fatalf("read %s succeeded", uri)
		}
		we := wireError(t, err)
		return fmt.Sprintf("%d %s", we.Code, strings.ReplaceAll(we.Message, uri, "URI"))
	}
	if res, err := eng.ReadResource(ctxGuard(t), &mcp.ReadResourceParams{URI: "alpha://public/1"}); err != nil || res.Contents[0].Text != "content of alpha://public/1" {
		t.Errorf("eng read alpha://public/1: %v", err)
	}
	// A URI the allowed template would produce but a deny names: deny wins, whatever allows the template.
	if _, err := eng.ReadResource(ctxGuard(t), &mcp.ReadResourceParams{URI: "alpha://item/1"}); err != nil {
		t.Errorf("eng read alpha://item/1 through the allowed template: %v", err)
	}
	for _, c := range []struct {
		cs   *mcp.ClientSession
		who  string
		uris []string
	}{
		{eng, "eng", []string{"alpha://secret/1", "beta://doc", "alpha://item/2"}},
		{ops, "ops", []string{"alpha://public/1", "alpha://secret/1"}},
	} {
		want := readErr(c.cs, "nowhere://nothing")
		for _, uri := range c.uris {
			if got := readErr(c.cs, uri); got != want {
				t.Errorf("%s reading hidden %s: %q, want the not-found answer %q", c.who, uri, got, want)
			}
		}
	}

	// Prompts likewise.
	listPrompts := func(cs *mcp.ClientSession) []string {
		var names []string
		cursor := ""
		for range 20 {
			res, err := cs.ListPrompts(ctxGuard(t), &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
			for _, p := range res.Prompts {
				names = append(names, p.Name)
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		slices.Sort(names)
		return names
	}
	if got, want := listPrompts(eng), []string{"alpha__p_public"}; !slices.Equal(got, want) {
		t.Errorf("eng prompts/list = %v, want %v", got, want)
	}
	if got, want := listPrompts(ops), []string{"beta__bp"}; !slices.Equal(got, want) {
		t.Errorf("ops prompts/list = %v, want %v", got, want)
	}
	if _, err := eng.GetPrompt(ctxGuard(t), &mcp.GetPromptParams{Name: "alpha__p_public"}); err != nil {
		t.Errorf("eng get alpha__p_public: %v", err)
	}
	promptErr := func(cs *mcp.ClientSession, name string) string {
		t.Helper()
		_, err := cs.GetPrompt(ctxGuard(t), &mcp.GetPromptParams{Name: name})
		if err == nil {
			t.Fatalf("get prompt %s succeeded", name)
		}
		we := wireError(t, err)
		return fmt.Sprintf("%d %s", we.Code, strings.ReplaceAll(we.Message, name, "NAME"))
	}
	for _, c := range []struct {
		cs    *mcp.ClientSession
		who   string
		names []string
	}{
		{eng, "eng", []string{"alpha__p_secret", "beta__bp"}},
		{ops, "ops", []string{"alpha__p_public", "alpha__p_secret"}},
	} {
		want := promptErr(c.cs, "nope__nothing")
		for _, n := range c.names {
			if got := promptErr(c.cs, n); got != want {
				t.Errorf("%s getting hidden prompt %s: %q, want the unknown-prompt answer %q", c.who, n, got, want)
			}
		}
	}
}

// TestAuthUpstreamStaticHeaders: an upstream with static headers sees them on every request, and never the
// client's Authorization.
func TestAuthUpstreamStaticHeaders(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo", "whosent"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstream(t, testUpstream{Name: "files", URL: up.url,
		Headers: map[string]string{"X-Api-Key": "k-123", "Authorization": "Bearer static-upstream-token"}}))
	tok := ai.sign(ai.claims(g.audience, "alice", "eng"))
	cs := g.connectAs(t, "alice", newBearer(tok))
	if got := call(t, cs, "files__whosent", nil); got != "Bearer static-upstream-token" {
		t.Errorf("the upstream's tool saw Authorization %q, want the configured one", got)
	}
	_ = g.send(t, http.MethodDelete, "/mcp", tok, "", "") // a request the gateway refuses (400) reaches nothing
	auths, keys := up.seen.authorizations(), up.seen.apiKeys()
	if len(auths) == 0 {
		t.Fatal("the upstream saw no request")
	}
	for i := range auths {
		if auths[i] != "Bearer static-upstream-token" || keys[i] != "k-123" {
			t.Errorf("upstream request %d: Authorization %q, X-Api-Key %q", i, auths[i], keys[i])
		}
		if strings.Contains(auths[i], tok) {
			t.Errorf("upstream request %d carried the client's token", i)
		}
	}
}

// TestAuthUpstreamClientCredentials: the gateway gets its own token with client credentials (resource= the
// upstream's URL) and the upstream sees that token, reused across requests and users.
func TestAuthUpstreamClientCredentials(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "search", []string{"echo", "whosent"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstream(t, testUpstream{Name: "search", URL: up.url,
		ClientCredentials: &auth.ClientCredentialsConfig{
			TokenURL: ai.srv.URL + "/token", ClientID: ccClientID, ClientSecret: ccClientSecret,
			Scopes: []string{"search"}, Resource: up.url,
		}}))
	alice := ai.sign(ai.claims(g.audience, "alice", "eng"))
	bob := ai.sign(ai.claims(g.audience, "bob", "ops"))
	for _, tok := range []string{alice, bob} {
		cs := g.connectAs(t, "c", newBearer(tok))
		if got := call(t, cs, "search__whosent", nil); got != "Bearer cc-token-1" {
			t.Errorf("the upstream saw %q, want the gateway's client-credentials token", got)
		}
	}
	for i, a := range up.seen.authorizations() {
		if a != "Bearer cc-token-1" {
			t.Errorf("upstream request %d: Authorization %q", i, a)
		}
	}
	reqs := ai.tokenRequests()
	if len(reqs) != 1 {
		t.Errorf("%d token requests, want 1 (the token is reused)", len(reqs))
	}
	for _, r := range reqs {
		if !r.basicAuth || r.form["grant_type"] != "client_credentials" || r.form["resource"] != up.url || r.form["scope"] != "search" {
			t.Errorf("token request %v (basic auth ok: %v), want client_credentials with resource=%s scope=search", r.form, r.basicAuth, up.url)
		}
		for _, v := range r.form {
			if v == alice || v == bob {
				t.Error("a client's token went to the client-credentials token endpoint")
			}
		}
	}
}

// TestAuthUpstreamTokenExchange: each user's calls reach the upstream with a token exchanged from that user's
// own token (RFC 8693), never with the user's token itself.
//
// "catalog" is the configuration as cmd/switchboard wires it: the upstream's catalog link has no principal, so
// the exchange refuses it (ErrNoSubjectToken), the upstream never connects, and nobody sees its tools.
// "per user" works around that (no credentials on the catalog link) to test the exchange itself.
func TestAuthUpstreamTokenExchange(t *testing.T) {
	for _, tc := range []struct {
		name             string
		anonymousCatalog bool
	}{{"catalog", false}, {"per user", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ai := newAuthIssuer(t)
			up := startAuthUpstream(t, "wiki", []string{"echo", "whosent"}, nil, nil)
			g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstreamWith(t, testUpstream{Name: "wiki", URL: up.url,
				TokenExchange: &auth.TokenExchangeConfig{
					TokenURL: ai.srv.URL + "/token", ClientID: ccClientID, ClientSecret: ccClientSecret,
					Audience: "wiki", Resource: up.url, Scopes: []string{"wiki.read"},
				}}, tc.anonymousCatalog))
			alice := ai.sign(ai.claims(g.audience, "alice", "eng"))
			bob := ai.sign(ai.claims(g.audience, "bob", "ops"))
			csA := g.connectAs(t, "alice", newBearer(alice))
			csB := g.connectAs(t, "bob", newBearer(bob))
			if names, _ := listAllTools(t, csA); !slices.Contains(names, "wiki__whosent") {
				t.Fatalf("alice's tools/list = %v: the token-exchange upstream is missing from the catalog "+
					"(its catalog link has no principal: token exchange answers ErrNoSubjectToken)", names)
			}
			if got, want := call(t, csA, "wiki__whosent", nil), "Bearer "+exchangedFor(alice); got != want {
				t.Errorf("alice's call reached the upstream with %q, want %q", got, want)
			}
			if got, want := call(t, csB, "wiki__whosent", nil), "Bearer "+exchangedFor(bob); got != want {
				t.Errorf("bob's call reached the upstream with %q, want %q", got, want)
			}
			for i, a := range up.seen.authorizations() {
				if strings.Contains(a, alice) || strings.Contains(a, bob) {
					t.Errorf("upstream request %d carried a client's token", i)
				}
			}
			n := 0
			for _, r := range ai.tokenRequests() {
				if r.form["grant_type"] != "urn:ietf:params:oauth:grant-type:token-exchange" {
					continue
				}
				n++
				if !r.basicAuth || r.form["resource"] != up.url || r.form["audience"] != "wiki" || r.form["scope"] != "wiki.read" ||
					r.form["subject_token_type"] != "urn:ietf:params:oauth:token-type:access_token" ||
					r.form["requested_token_type"] != "urn:ietf:params:oauth:token-type:access_token" ||
					(r.form["subject_token"] != alice && r.form["subject_token"] != bob) {
					t.Errorf("token exchange request %v (basic auth ok: %v)", r.form, r.basicAuth)
				}
			}
			if n != 2 {
				t.Errorf("%d token exchanges for 2 users, want 2 (one each, then cached)", n)
			}
		})
	}
}

// TestAuthTokenExchangeFollowsRefresh: docs/auth.md: "The token may change (refresh) while the key stays the
// same … Keep the latest *Principal on the session for token exchange". After the client refreshes its token,
// the upstream gets a token exchanged from the new one.
func TestAuthTokenExchangeFollowsRefresh(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "wiki", []string{"whosent"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstreamWith(t, testUpstream{Name: "wiki", URL: up.url,
		TokenExchange: &auth.TokenExchangeConfig{
			TokenURL: ai.srv.URL + "/token", ClientID: ccClientID, ClientSecret: ccClientSecret, Resource: up.url,
		}}, true))
	first := ai.sign(ai.claims(g.audience, "alice", "eng"))
	b := newBearer(first)
	cs := g.connectAs(t, "alice", b)
	if got, want := call(t, cs, "wiki__whosent", nil), "Bearer "+exchangedFor(first); got != want {
		t.Fatalf("first call reached the upstream with %q, want %q", got, want)
	}
	second := ai.sign(ai.claims(g.audience, "alice", "eng"))
	b.token.Store(&second)
	if got, want := call(t, cs, "wiki__whosent", nil), "Bearer "+exchangedFor(second); got != want {
		t.Errorf("after the refresh the upstream got %q, want %q (exchanged from the refreshed token); the session keeps the principal of initialize", got, want)
	}
}

// TestAuthAudit: one audit event per call, naming the principal, the upstream, the tool, the outcome and the
// duration, and never the arguments or the token.
func TestAuthAudit(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo", "fail", "iserror", "fence"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	tok := ai.sign(ai.claims(g.audience, "alice", "eng"))
	cs := g.connectAs(t, "alice", newBearer(tok))
	// through returns the audit events from index from up to a fence: one more call, made now, whose own event
	// is the positive signal that the calls before it have logged all they log on their way out. A call's event
	// is logged before its response is sent (routing's endLeg precedes the push) and the fence is called only
	// once those calls were answered, so an event one of them logs twice is before the fence's, and counted.
	through := func(from int) []map[string]any {
		t.Helper()
		call(t, cs, "files__fence", nil)
		var fence int
		events := g.waitAudit(t, "the fence call's audit event", func(events []map[string]any) bool {
			fence = slices.IndexFunc(events[min(from, len(events)):], func(e map[string]any) bool { return e["tool"] == "files__fence" })
			return fence >= 0
		})
		return events[from : from+fence]
	}
	const secretArg = "ARG-SECRET-4f1c9e"
	before := len(g.audit.events(t))
	for i := range 3 {
		if got := call(t, cs, "files__echo", map[string]any{"text": fmt.Sprintf("%s-%d", secretArg, i)}); !strings.Contains(got, secretArg) {
			t.Fatalf("echo = %q", got)
		}
	}
	events := through(before)
	if len(events) != 3 {
		t.Fatalf("%d audit events for 3 calls: %v", len(events), events)
	}
	for _, e := range events {
		d, isNum := e["duration_ms"].(float64)
		if e["sub"] != "alice" || e["iss"] != ai.srv.URL || e["upstream"] != "files" || e["method"] != "tools/call" ||
			e["tool"] != "files__echo" || e["outcome"] != "ok" || !isNum || d < 0 || e["level"] != "INFO" ||
			e["session"] == nil || e["session"] == "" {
			t.Errorf("audit event %v", e)
		}
	}
	log := g.audit.String()
	if strings.Contains(log, secretArg) || strings.Contains(log, tok) || strings.Contains(log, "corp.example") {
		t.Errorf("the audit log holds arguments, the token or claims:\n%s", log)
	}

	// A tool whose result is isError: still one event (the call itself succeeded at the protocol level).
	before = len(g.audit.events(t))
	if got := call(t, cs, "files__iserror", map[string]any{"text": secretArg}); !strings.HasPrefix(got, "ERROR:") {
		t.Fatalf("iserror = %q", got)
	}
	if events := through(before); len(events) != 1 || events[0]["tool"] != "files__iserror" || events[0]["upstream"] != "files" {
		t.Errorf("audit events of an isError call: %v, want one for files__iserror", events)
	}

	// A call the upstream answers with a JSON-RPC error: outcome error, with the code (docs/auth.md: "code, when
	// there is one").
	before = len(g.audit.events(t))
	_, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "files__fail", Arguments: map[string]any{"text": secretArg}})
	if we := wireError(t, err); we.Code != -32050 {
		t.Fatalf("files__fail: %v", err)
	}
	events = through(before)
	if len(events) != 1 {
		t.Fatalf("%d audit events for one failed call: %v", len(events), events)
	}
	e := events[0]
	if e["tool"] != "files__fail" || e["outcome"] != "error" || e["sub"] != "alice" {
		t.Errorf("audit event of a failed call: %v, want outcome=error", e)
	}
	if e["code"] != float64(-32050) {
		t.Errorf("audit event of a failed call has code %v, want -32050: the JSON-RPC error code is not carried to the audit log", e["code"])
	}
	if strings.Contains(g.audit.String(), secretArg) {
		t.Error("the audit log holds a failed call's arguments")
	}
}

// TestAuthAuditDenied: docs/auth.md: the audit event "is logged at warn when the outcome is denied", and the
// contract lists the outcome "denied". A call to a tool the policy hides is a call: it must leave an audit event.
func TestAuthAuditDenied(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"echo", "delete_all"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{policy: []auth.PolicyRule{{Allow: []string{"files"}, Deny: []string{"files/delete_*"}}}},
		routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	cs := g.connectAs(t, "mallory", newBearer(ai.sign(ai.claims(g.audience, "mallory", "eng"))))
	if _, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "files__delete_all", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the denied call succeeded")
	}
	// A later allowed call flushes the order of events: the denied one must be before it.
	call(t, cs, "files__echo", map[string]any{"text": "x"})
	g.waitAudit(t, "the allowed call's audit event", func(events []map[string]any) bool {
		return slices.ContainsFunc(events, func(e map[string]any) bool { return e["tool"] == "files__echo" })
	})
	var denied []map[string]any
	for _, e := range g.audit.events(t) {
		if e["tool"] == "files__delete_all" {
			denied = append(denied, e)
		}
	}
	if len(denied) != 1 || denied[0]["outcome"] != "denied" || denied[0]["level"] != "WARN" || denied[0]["sub"] != "mallory" {
		t.Errorf("audit events of the denied call: %v, want one outcome=denied at WARN naming mallory (all events: %v)", denied, g.audit.events(t))
	}
}

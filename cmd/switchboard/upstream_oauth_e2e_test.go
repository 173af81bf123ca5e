package main

// End-to-end proof of the gateway's OAuth client of upstream authorization servers (issue 17,
// auth/upstreamauth), against a REAL authorization server and a REAL browser:
//
//   - the authorization server is npm oidc-provider (testdata/oauth/authcode-provider.mjs): the
//     authorization-code grant with PKCE S256, RFC 8707 resource indicators with RS256 JWT access tokens
//     for the MCP server's URL, rotated refresh tokens, RFC 7009 revocation, open RFC 7591 registration,
//     RFC 9207 iss, and a login + consent a browser drives;
//   - the upstream is a Go MCP server (the official Go SDK, streamable HTTP on httptest) that requires that
//     server's tokens, verified with go-oidc against its JWKS with aud = its own URL; without one it answers
//     401 with an RFC 9728 resource_metadata challenge, and its tool whoami returns the token's subject;
//   - the browser is headless Chromium driven by chromedp.
//
// The harness (startAuthcodeProvider, newOAuthUpstream, browserLogin) is meant to be reused by the gateway's
// own end-to-end test of per-user upstream OAuth once the gateway wires upstreamauth in.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
)

// upstreamOAuthGuard bounds the whole test: a hung browser or provider fails it instead of hanging. Nothing
// is timed against it.
const upstreamOAuthGuard = 2 * time.Minute

// authcodeProvider is a running testdata/oauth/authcode-provider.mjs.
type authcodeProvider struct {
	// Issuer is the provider's issuer URL, from its ready line.
	Issuer string
	log    *lineLog
}

// startAuthcodeProvider runs authcode-provider.mjs with node (Node 22+) on a free loopback port, for the
// resources given (MCP server URLs), with consent "auto" or "page", and returns once it printed its ready
// line. It is stopped, with its process group, in t.Cleanup.
func startAuthcodeProvider(ctx context.Context, t *testing.T, root, node, consent string, resources ...string) *authcodeProvider {
	t.Helper()
	port := freePort(t)
	args := []string{"authcode-provider.mjs", "--port", strconv.Itoa(port), "--consent", consent}
	for _, r := range resources {
		args = append(args, "--resource", r)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = filepath.Join(root, "cmd", "switchboard", "testdata", "oauth")
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	lg := &lineLog{t: t, prefix: "[authcode-provider] "}
	cmd.Stderr = lg
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start authcode-provider.mjs: %v", err)
	}
	ready := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				ready <- sc.Text()
				first = false
				continue
			}
			_, _ = lg.Write(append(sc.Bytes(), '\n'))
		}
		err := cmd.Wait()
		lg.note(fmt.Sprintf("exited: %v", err))
		close(done)
	}()
	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		lg.close()
	})
	select {
	case line := <-ready:
		var r struct {
			Ready  bool   `json:"ready"`
			Issuer string `json:"issuer"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || !r.Ready || r.Issuer == "" {
			t.Fatalf("authcode-provider.mjs: unexpected ready line %q (%v)\n%s", line, err, lg.tail(20))
		}
		return &authcodeProvider{Issuer: r.Issuer, log: lg}
	case <-done:
		t.Fatalf("authcode-provider.mjs exited before it was ready:\n%s", lg.tail(40))
	case <-ctx.Done():
		t.Fatalf("authcode-provider.mjs not ready: %v\n%s", ctx.Err(), lg.tail(40))
	}
	return nil
}

// oauthUpstream is a Go MCP server that requires access tokens of one authorization server for its own
// URL. Its tool whoami returns the token's subject.
type oauthUpstream struct {
	srv *httptest.Server
	// URL is the MCP endpoint, the resource tokens must be for.
	URL string
	// MetadataURL is its RFC 9728 protected-resource metadata.
	MetadataURL string
}

// newOAuthUpstream makes the upstream's server, not yet started: its URL is known, so that the
// authorization server can be told of the resource before start is called.
func newOAuthUpstream(t *testing.T) *oauthUpstream {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	base := "http://" + srv.Listener.Addr().String()
	return &oauthUpstream{srv: srv, URL: base + "/mcp", MetadataURL: base + "/.well-known/oauth-protected-resource/mcp"}
}

// start serves the upstream, trusting issuer's tokens with scope: go-oidc discovers the issuer and checks
// the signature against its JWKS, iss, exp and aud = u.URL; the token must also be typed at+jwt (RFC 9068
// §4).
func (u *oauthUpstream) start(ctx context.Context, t *testing.T, issuer, scope string) {
	t.Helper()
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatalf("go-oidc discovery of %s: %v", issuer, err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: u.URL, SupportedSigningAlgs: []string{oidc.RS256}})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if typ := jwtHeaderType(token); !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
			return nil, fmt.Errorf("%w: token type %q is not at+jwt", auth.ErrInvalidToken, typ)
		}
		idt, err := verifier.Verify(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		var claims struct {
			Scope    string `json:"scope"`
			ClientID string `json:"client_id"`
		}
		if err := idt.Claims(&claims); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: idt.Subject, Scopes: strings.Fields(claims.Scope), Expiration: idt.Expiry,
			Extra: map[string]any{"client_id": claims.ClientID}}, nil
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "oauth-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "The subject of the caller's access token."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if req.Extra == nil || req.Extra.TokenInfo == nil {
				return nil, nil, errors.New("no token")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: u.MetadataURL,
		Scopes:              []string{scope},
	})(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               u.URL,
		AuthorizationServers:   []string{issuer},
		ScopesSupported:        []string{scope},
		BearerMethodsSupported: []string{"header"},
	}))
	u.srv.Config.Handler = mux
	u.srv.Start()
}

// jwtHeaderType is the typ of a JWS compact token's header ("" when it cannot be read).
func jwtHeaderType(token string) string {
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Typ string `json:"typ"`
	}
	_ = json.Unmarshal(raw, &h)
	return h.Typ
}

// bearerTransport adds the access token to every request, as the gateway does toward an upstream.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// callWhoami calls the upstream's whoami with the token, through the Go SDK's streamable HTTP client, and
// returns the text it answered.
func callWhoami(ctx context.Context, mcpURL, token string) (string, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-e2e", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   mcpURL,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("whoami: unexpected result %+v", res)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("whoami: content %T", res.Content[0])
	}
	return text.Text, nil
}

// callbackServer is the gateway's loopback redirect URL: each request's query goes to Queries.
type callbackServer struct {
	// URL is the redirect URL.
	URL string
	// Queries receives each callback's query.
	Queries chan url.Values
}

// newCallbackServer serves the redirect URL on httptest.
func newCallbackServer(t *testing.T) *callbackServer {
	t.Helper()
	cb := &callbackServer{Queries: make(chan url.Values, 4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case cb.Queries <- r.URL.Query():
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>Connected</title><h1 id=done>Connected. You may close this tab.</h1>")
	}))
	t.Cleanup(srv.Close)
	cb.URL = srv.URL + "/callback"
	return cb
}

// browserLogin opens authURL in a fresh browser context of the browser bctx (no cookies of an earlier
// user), signs in as user at authcode-provider.mjs's login form, allows at its consent page, and returns
// the query the browser brought to the callback. shoot, when set, is called on the login page and on the
// consent page with the page's name.
func browserLogin(ctx context.Context, t *testing.T, bctx context.Context, cb *callbackServer, authURL, user string, shoot func(ctx context.Context, name string)) url.Values {
	t.Helper()
	uctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	// Nothing of an earlier login is left: a fresh context has no session cookie, so the provider asks for a
	// login again.
	if err := chromedp.Do(uctx, chromedp.Navigate(authURL), chromedp.WaitVisible(chromedp.CSS("#username"))); err != nil {
		t.Fatalf("%s: the login page: %v", user, err)
	}
	if shoot != nil {
		shoot(uctx, "login")
	}
	if err := chromedp.Do(uctx,
		chromedp.SendKeys(chromedp.CSS("#username"), user),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS("#allow")),
	); err != nil {
		t.Fatalf("%s: signing in: %v", user, err)
	}
	if shoot != nil {
		shoot(uctx, "consent")
	}
	if err := chromedp.Do(uctx, chromedp.Click(chromedp.CSS("#allow"))); err != nil {
		t.Fatalf("%s: consenting: %v", user, err)
	}
	var q url.Values
	select {
	case q = <-cb.Queries:
	case <-ctx.Done():
		t.Fatalf("%s: the browser never reached the callback: %v", user, ctx.Err())
	}
	if err := chromedp.Do(uctx, chromedp.WaitVisible(chromedp.CSS("#done"))); err != nil {
		t.Fatalf("%s: the callback page: %v", user, err)
	}
	return q
}

func TestE2EUpstreamOAuthFlow(t *testing.T) {
	missing := e2eGate(t)
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "oidc-provider", "package.json")); err != nil {
		missing("Node peer oidc-provider not installed: run .ci/setup in %s", root)
	}
	node, err := node22(root)
	if err != nil {
		missing("no Node 22 for oidc-provider: %v", err)
	}
	browser, err := findChromium()
	if err != nil {
		missing("%v: run .ci/setup (Debian's chromium)", err)
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), upstreamOAuthGuard)
	defer cancel()

	// 1. The upstream (its URL first), its authorization server, then the upstream served.
	const scope = "mcp"
	up := newOAuthUpstream(t)
	as := startAuthcodeProvider(ctx, t, root, node, "page", up.URL)
	up.start(ctx, t, as.Issuer, scope)
	cb := newCallbackServer(t)

	// 2. As the gateway: a call without a token is refused with the challenge.
	if _, err := callWhoami(ctx, up.URL, ""); err == nil {
		t.Fatal("whoami without a token succeeded")
	}
	challenge := unauthorizedChallenge(ctx, t, up.URL)
	ch, ok := upstreamauth.ParseChallenge(challenge)
	if !ok || ch.ResourceMetadata != up.MetadataURL {
		t.Fatalf("challenge %q parsed as %+v, %v; want resource_metadata %s", challenge, ch, ok, up.MetadataURL)
	}

	// 3. Discovery of the real metadata, identity, registration at the real provider.
	srv, err := upstreamauth.Discover(ctx, nil, up.URL, ch)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if srv.Issuer != as.Issuer || srv.Resource != up.URL || !srv.IssParameterSupported || srv.RegistrationEndpoint == "" ||
		srv.RevocationEndpoint == "" || !srv.CIMDSupported {
		t.Errorf("Discover: %+v", srv)
	}
	client, identity, err := upstreamauth.ChooseIdentity(srv, nil, "")
	if err != nil || identity != upstreamauth.IdentityDynamicRegistration {
		t.Fatalf("ChooseIdentity without a CIMD URL: %v, %v; want dynamic registration", identity, err)
	}
	scopes := upstreamauth.SelectScopes(nil, ch, srv)
	client, err = upstreamauth.Register(ctx, nil, srv, upstreamauth.Registration{
		Name: "Switchboard e2e", RedirectURIs: []string{cb.URL}, Scopes: scopes,
	})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if client.ID == "" || client.AuthMethod != upstreamauth.AuthNone || client.Secret != "" {
		t.Errorf("registered %v; want a public client", client)
	}
	flow, err := upstreamauth.NewFlow(upstreamauth.FlowConfig{Server: srv, Client: client, RedirectURL: cb.URL, Scopes: scopes})
	if err != nil {
		t.Fatalf("NewFlow: %v", err)
	}
	t.Logf("discovered %s for %s; registered %v; scopes %v", srv.Issuer, srv.Resource, client, scopes)

	// 4. The browser.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.WindowSize(1024, 768))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses root, and CI runs as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	dir := upstreamScreenshotDir(t)
	shoot := func(pctx context.Context, name string) {
		png, err := chromedp.Run(pctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(dir, "upstream-oauth-"+name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	// connect runs one authorization as user and returns its pending record, the callback query and the
	// tokens.
	connect := func(user string, shoot func(context.Context, string)) (upstreamauth.Pending, url.Values, *oauth2.Token) {
		t.Helper()
		pending, authURL := flow.Start()
		u, err := url.Parse(authURL)
		if err != nil {
			t.Fatal(err)
		}
		if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("resource") != up.URL || q.Get("state") != pending.State {
			t.Errorf("authorization URL without S256, resource or state: %v", q)
		}
		q := browserLogin(ctx, t, bctx, cb, authURL, user, shoot)
		if q.Get("iss") != as.Issuer || q.Get("state") != pending.State || q.Get("code") == "" {
			t.Errorf("%s: callback query has iss %q, state matching %v, code %v", user, q.Get("iss"),
				q.Get("state") == pending.State, q.Get("code") != "")
		}
		tok, err := flow.Finish(ctx, pending, q)
		if err != nil {
			t.Fatalf("%s: Finish: %v", user, err)
		}
		if tok.AccessToken == "" || tok.RefreshToken == "" {
			t.Fatalf("%s: Finish gave an access token %v and a refresh token %v", user, tok.AccessToken != "", tok.RefreshToken != "")
		}
		return pending, q, tok
	}
	whoami := func(what, token, want string) {
		t.Helper()
		got, err := callWhoami(ctx, up.URL, token)
		if err != nil {
			t.Fatalf("%s: whoami: %v", what, err)
		}
		if got != want {
			t.Fatalf("%s: whoami = %q, want %q", what, got, want)
		}
		t.Logf("%s: whoami = %q", what, got)
	}

	// 5. alice, then bob in a fresh browser context.
	_, _, aliceTok := connect("alice", shoot)
	whoami("alice", aliceTok.AccessToken, "alice")
	bobPending, bobQuery, bobTok := connect("bob", nil)
	whoami("bob", bobTok.AccessToken, "bob")
	if claims := jwtClaims(t, bobTok.AccessToken); claims["aud"] != up.URL || claims["sub"] != "bob" || claims["client_id"] != client.ID {
		t.Errorf("bob's access token claims: aud %v, sub %v, client_id %v", claims["aud"], claims["sub"], claims["client_id"])
	}

	// 6. The callback replayed: the code is spent.
	if _, err := flow.Finish(ctx, bobPending, bobQuery); err == nil {
		t.Error("a replayed callback was accepted")
	} else {
		var oe *upstreamauth.OAuthError
		if !errors.As(err, &oe) || oe.Code != "invalid_grant" {
			t.Errorf("replayed callback: %v; want the token endpoint's invalid_grant", err)
		}
		t.Logf("replayed callback refused: %v", err)
	}
	// A tampered or missing iss: refused before anything is sent.
	tampered := maps.Clone(bobQuery)
	tampered.Set("iss", "http://127.0.0.1:1")
	if _, err := flow.Finish(ctx, bobPending, tampered); !errors.Is(err, upstreamauth.ErrMixUp) {
		t.Errorf("tampered iss: %v; want ErrMixUp", err)
	}
	noIss := maps.Clone(bobQuery)
	noIss.Del("iss")
	if _, err := flow.Finish(ctx, bobPending, noIss); !errors.Is(err, upstreamauth.ErrMixUp) {
		t.Errorf("missing iss from a server that advertises it: %v; want ErrMixUp", err)
	}

	// 7. Refresh with rotation; the rotated-out refresh token is dead.
	aliceNew, rotated, err := flow.Refresh(ctx, aliceTok)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if !rotated || aliceNew.RefreshToken == aliceTok.RefreshToken {
		t.Errorf("Refresh: rotated %v; the provider rotates every refresh token", rotated)
	}
	if aliceNew.AccessToken == aliceTok.AccessToken {
		t.Error("Refresh gave the same access token")
	}
	whoami("alice after refresh", aliceNew.AccessToken, "alice")

	// 8. Revoke the refresh token: a second refresh fails with invalid_grant.
	if err := flow.Revoke(ctx, aliceNew.RefreshToken, upstreamauth.HintRefreshToken); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if _, _, err := flow.Refresh(ctx, aliceNew); err == nil {
		t.Error("Refresh after Revoke succeeded")
	} else {
		var oe *upstreamauth.OAuthError
		if !errors.As(err, &oe) || oe.Code != "invalid_grant" {
			t.Errorf("Refresh after Revoke: %v; want invalid_grant", err)
		}
		t.Logf("refresh after revocation refused: %v", err)
	}

	// 9. The replayed code cost bob his grant: the provider revokes what a code issued when the code comes
	// back (RFC 6749 §4.1.2), so his refresh token is dead too.
	if _, _, err := flow.Refresh(ctx, bobTok); err == nil {
		t.Error("bob's refresh token survived the replay of his code")
	}

	// 10. A rotated-out refresh token is dead, and its reuse revokes the grant (oidc-provider's reuse
	// detection): the caller must store a rotated token before using it.
	_, _, secondTok := connect("alice", nil)
	rotatedTok, rotated, err := flow.Refresh(ctx, secondTok)
	if err != nil || !rotated {
		t.Fatalf("Refresh: rotated %v, %v", rotated, err)
	}
	whoami("alice's second grant after refresh", rotatedTok.AccessToken, "alice")
	if _, _, err := flow.Refresh(ctx, secondTok); err == nil {
		t.Error("a rotated-out refresh token was accepted again")
	}
	if _, _, err := flow.Refresh(ctx, rotatedTok); err == nil {
		t.Error("the grant survived the reuse of a rotated-out refresh token")
	}

	// 11. No token ever reached the provider's log.
	for _, tok := range []string{aliceTok.AccessToken, aliceTok.RefreshToken, aliceNew.AccessToken, aliceNew.RefreshToken, bobTok.AccessToken, bobTok.RefreshToken} {
		if strings.Contains(as.log.String(), tok) {
			t.Error("the provider's log holds a token")
		}
	}
	t.Logf("upstream OAuth flow proven in %v", time.Since(started).Round(time.Millisecond))
}

// unauthorizedChallenge POSTs an initialize request without a token to the MCP server, expects 401, and
// returns its WWW-Authenticate fields joined (RFC 9110 §5.3).
func unauthorizedChallenge(ctx context.Context, t *testing.T, mcpURL string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("initialize without a token: HTTP %d, want 401", resp.StatusCode)
	}
	return strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")
}

// jwtClaims decodes a JWT's claims without verifying it (the upstream verified it).
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the access token is not a JWS (%d parts)", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// findChromium is the first of Debian's chromium, Ubuntu's name for it, and Google's build found on PATH
// (as gateway/connections' browser test finds it).
func findChromium() (string, error) {
	var errs []string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		p, err := exec.LookPath(name)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("no browser found: %s", strings.Join(errs, "; "))
}

// upstreamScreenshotDir is $SWITCHBOARD_SCREENSHOTS (made if missing), else a directory of the test's own.
func upstreamScreenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("SWITCHBOARD_SCREENSHOTS: %v", err)
	}
	return dir
}

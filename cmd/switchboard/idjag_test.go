package main

// type: id-jag (SEP-990, Enterprise-Managed Authorization) through the real gateway, built and run in process:
// each client's ID token from the company's identity provider is exchanged there for an ID-JAG, which the
// upstream's authorization server takes for that person's token, with no browser step. The identity provider
// and the authorization server are small fakes over HTTP; the upstream is a Go SDK MCP server that refuses any
// request without a token it issued.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// idJAGServers are the company's identity provider's token exchange (RFC 8693, for an ID-JAG) and the
// upstream's authorization server (RFC 7523 JWT bearer grant). The IdP refuses mallory; the tokens they issue
// look like JWTs (eyJ…), so the log scan below finds any that leaks.
type idJAGServers struct {
	idp, as *httptest.Server
	mu      sync.Mutex
	issued  []string // every ID-JAG and access token handed out
	forms   []string // what each endpoint was asked, for failures
	round   int      // the access tokens' round: a new one after a revocation (accessTokenIn)
}

// upstreamYAML is the config's upstreams block: crm at url, reached by ID-JAG through these servers, with the
// secrets in $IDP_SECRET and $AS_SECRET.
func (s *idJAGServers) upstreamYAML(url string) string {
	return fmt.Sprintf(`upstreams:
  - name: crm
    url: %s
    auth:
      type: id-jag
      idp: {tokenURL: "%s/token", clientId: switchboard, clientSecret: "${IDP_SECRET}"}
      issuer: %s
      tokenURL: %s/token
      clientId: acme-switchboard
      clientSecret: "${AS_SECRET}"
`, url, s.idp.URL, s.as.URL, s.as.URL)
}

// fakeJWT is a token whose payload names sub; nothing verifies its signature.
func fakeJWT(claims map[string]any) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "ES256", "typ": "oauth-id-jag+jwt"}) + "." + enc(claims) + ".c2lnbmF0dXJl"
}

// jwtSub reads sub of a JWT's payload, unverified.
func jwtSub(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct{ Sub string }
	_ = json.Unmarshal(b, &c)
	return c.Sub
}

func newIDJAGServers(t *testing.T, asIssuer func() string, resource string) *idJAGServers {
	s := &idJAGServers{}
	s.idp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		id, secret, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		who := jwtSub(f.Get("subject_token"))
		if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" ||
			f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" ||
			f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" ||
			f.Get("audience") != asIssuer() || f.Get("resource") != resource || id != "switchboard" || secret != "idp-secret" || who == "" {
			s.note("idp: unexpected " + f.Encode())
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_request"}`)
			return
		}
		if who == "mallory" {
			// The description repeats the assertion, as careless servers do: the gateway must not pass it on.
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"access_denied","error_description":"no access for %s"}`, f.Get("subject_token"))
			return
		}
		jag := fakeJWT(map[string]any{"sub": who, "aud": asIssuer(), "resource": resource, "client_id": "acme-switchboard"})
		s.note("")
		s.mu.Lock()
		s.issued = append(s.issued, jag)
		s.mu.Unlock()
		fmt.Fprintf(w, `{"access_token":%q,"issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A","expires_in":300}`, jag)
	}))
	t.Cleanup(s.idp.Close)
	s.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") == "client_credentials" && id == "acme-switchboard" && secret == "as-secret" {
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, serviceToken)
			return
		}
		jag := r.PostForm.Get("assertion")
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || id != "acme-switchboard" || secret != "as-secret" || !s.wasIssued(jag) {
			s.note("as: unexpected " + r.PostForm.Encode())
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		s.mu.Lock()
		at := accessTokenIn(jwtSub(jag), s.round)
		s.issued = append(s.issued, at)
		s.mu.Unlock()
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, at)
	}))
	t.Cleanup(s.as.Close)
	return s
}

// serviceToken is what the authorization server issues the gateway itself (client credentials), for the
// catalog's session, which no person is behind.
const serviceToken = "gateway-service-token"

// accessTokenFor is the upstream token the authorization server issues to sub.
func accessTokenFor(sub string) string { return accessTokenIn(sub, 0) }

// accessTokenIn is the token it issues to sub in a round: round 0 is accessTokenFor's, and each revocation starts
// a new one.
func accessTokenIn(sub string, round int) string {
	if round == 0 {
		return fakeJWT(map[string]any{"sub": sub, "aud": "crm", "typ": "access"})
	}
	return fakeJWT(map[string]any{"sub": sub, "aud": "crm", "typ": "access", "round": round})
}

func (s *idJAGServers) note(problem string) {
	if problem == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forms = append(s.forms, problem)
}

func (s *idJAGServers) wasIssued(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.issued {
		if t == tok {
			return true
		}
	}
	return false
}

// syncBuffer is a bytes.Buffer the gateway's logger may write from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestIDJAGUpstream: two people signed in at the company's IdP reach an id-jag upstream as themselves, with no
// browser step (one exchange at the IdP and one grant at the authorization server each, then cached), while the
// catalog lists the upstream as the gateway itself (client credentials, as token exchange does); a third,
// whom the IdP refuses, gets a tool error that says so; and no ID token, ID-JAG or access token is in the log.
func TestIDJAGUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure guard; nothing is timed against it
	defer cancel()
	idp := newTestIdP(t)
	up := newCredentialUpstream(t, "Bearer "+serviceToken, "Bearer "+accessTokenFor("alice"), "Bearer "+accessTokenFor("bob"))
	var srv *idJAGServers
	srv = newIDJAGServers(t, func() string { return srv.as.URL }, up.URL)
	const publicURL = "http://127.0.0.1:1"
	audience := publicURL + "/mcp"
	cfgText := fmt.Sprintf(`listen: 127.0.0.1:0
log: {format: json, level: debug}
auth:
  issuer: %s
  audience: %s
%s`, idp.srv.URL, audience, srv.upstreamYAML(up.URL))
	t.Setenv("IDP_SECRET", "idp-secret")
	t.Setenv("AS_SECRET", "as-secret")
	logs := &syncBuffer{}
	g := runIDJAGGateway(ctx, t, cfgText, logs)
	mcpURL := "http://" + g.ln.Addr().String() + "/mcp"
	var idTokens []string
	for _, person := range []string{"alice", "bob", "mallory"} {
		tok := idp.token(t, person, audience)
		idTokens = append(idTokens, tok)
		cs := connectAs(ctx, t, mcpURL, tok)
		for range 2 { // the second call is served from the cache
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crm__whoami"})
			switch {
			case person != "mallory" && (err != nil || res.IsError || toolText(res) != "Bearer "+accessTokenFor(person)):
				t.Errorf("%s's call: %v %+v; want the upstream to see their own token", person, err, res)
			case person == "mallory":
				msg := ""
				if err != nil {
					msg = err.Error()
				} else if res.IsError {
					msg = toolText(res)
				} else {
					t.Fatalf("mallory, refused by the IdP, reached the upstream: it saw %q", toolText(res))
				}
				// A clear tool error: the IdP refused this person, with its error code (the rest of its answer is in
				// the log), and retrying will not help.
				if !res.IsError || !strings.Contains(msg, `upstream "crm" refused access for you: the identity provider refused to grant access for this person (access_denied)`) || strings.Contains(msg, "eyJ") {
					t.Errorf("mallory's answer %q (err %v); want a tool error saying the IdP refused them, without any token", msg, err)
				}
			}
		}
	}
	// The administrator sees the refusal in the upstream's status, without any token.
	for _, st := range g.router.Status() {
		if st.Name == "crm" && (!strings.Contains(st.Refused, "mallory") || !strings.Contains(st.Refused, "access_denied") || strings.Contains(st.Refused, "eyJ")) {
			t.Errorf("crm's status says of the refusal %q; want mallory, the IdP's code, no token", st.Refused)
		}
	}
	// /readyz has no authentication: it does not name the person.
	if resp, err := http.Get("http://" + g.ln.Addr().String() + "/readyz"); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"name": "crm"`) || strings.Contains(string(b), "mallory") {
			t.Errorf("/readyz names the refused person, or not crm: %s", b)
		}
	}
	if !strings.Contains(logs.String(), "the identity provider refused (access_denied)") {
		t.Errorf("the log does not say the IdP refused mallory:\n%s", logs.String())
	}
	if len(srv.forms) > 0 {
		t.Errorf("the IdP or the authorization server was asked wrongly: %q", srv.forms)
	}
	if got := len(srv.issued); got != 4 {
		t.Errorf("%d tokens issued; want 4 (an ID-JAG and an access token for each of alice and bob, then cached)", got)
	}
	for _, r := range up.requests() {
		if r.method == "tools/call" && r.authorization == "Bearer "+serviceToken {
			t.Error("a tools/call went upstream as the gateway itself, not as the person")
		}
		for _, tok := range idTokens {
			if strings.Contains(r.authorization, tok) {
				t.Errorf("the upstream got a client's ID token (%s)", r.method)
			}
		}
	}
	out := logs.String()
	for _, tok := range append(idTokens, srv.issued...) {
		if strings.Contains(out, tok) {
			t.Errorf("the log holds a token:\n%s", out)
			break
		}
	}
	if strings.Contains(out, "eyJ") {
		t.Errorf("the log holds something that looks like a JWT:\n%s", out)
	}
}

// runIDJAGGateway builds the gateway of cfgText in process, logging to logs, and runs it until the test ends.
func runIDJAGGateway(ctx context.Context, t *testing.T, cfgText string, logs *syncBuffer) *gatewayProcess {
	t.Helper()
	path := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := build(ctx, cfg, serveFlags{path: path, grace: time.Second}, log, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; g.close() })
	if err := g.router.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestIDJAGReplicas: two gateways on one redis-server, with auth.tokenKeys, share each person's ID-JAG token:
// alice, exchanged for on the first, reaches the upstream through the second with the same token and no exchange,
// and so does her new ID token; bob, exchanged for on the second, through the first. Once the upstream refuses
// alice's token before it expires (revoked), the replica it refuses exchanges again and retries, and the other takes
// the new token from Redis. What Redis holds is sealed:
// no ID token, ID-JAG or access token, nor anything like a JWT, in any key or value.
func TestIDJAGReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure guard; nothing is timed against it
	defer cancel()
	redisAddr := startRedisServer(t) // skips without redis-server, as the other replica tests do
	idp := newTestIdP(t)
	up := newCredentialUpstream(t, "Bearer "+serviceToken, "Bearer "+accessTokenFor("alice"), "Bearer "+accessTokenFor("bob"),
		"Bearer "+accessTokenIn("alice", 1))
	// The upstream's authorization server revokes a token: the upstream refuses it from then on.
	var revokedMu sync.Mutex
	revoked := map[string]bool{}
	target, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		revokedMu.Lock()
		refused := revoked[r.Header.Get("Authorization")]
		revokedMu.Unlock()
		if refused {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	upURL := front.URL + target.Path
	var srv *idJAGServers
	srv = newIDJAGServers(t, func() string { return srv.as.URL }, upURL)
	const publicURL = "http://127.0.0.1:1"
	audience := publicURL + "/mcp"
	t.Setenv("IDP_SECRET", "idp-secret")
	t.Setenv("AS_SECRET", "as-secret")
	cfgText := fmt.Sprintf(`listen: 127.0.0.1:0
log: {format: json, level: debug}
cursorSecret: "idjag-replicas-cursor-secret-0123456789abcdef"
redis: {url: "redis://%s"}
auth:
  issuer: %s
  audience: %s
  tokenKeys: "%s"
%s`, redisAddr, idp.srv.URL, audience, testTokenKeys(t), srv.upstreamYAML(upURL))
	logs := &syncBuffer{}
	replicas := []*gatewayProcess{runIDJAGGateway(ctx, t, cfgText, logs), runIDJAGGateway(ctx, t, cfgText, logs)}
	issued := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.issued)
	}
	var idTokens []string
	revoke := func() { // alice's first token, and the AS's next ones are of round 1
		revokedMu.Lock()
		revoked["Bearer "+accessTokenFor("alice")] = true
		revokedMu.Unlock()
		srv.mu.Lock()
		srv.round = 1
		srv.mu.Unlock()
	}
	steps := []struct {
		person  string
		replica int
		before  func()
		round   int // of the token the upstream should see
		issued  int // tokens the IdP and the AS issued so far: an ID-JAG and an access token per exchange
	}{
		{"alice", 0, nil, 0, 2},
		{"alice", 1, nil, 0, 2}, // the first replica's token, from Redis
		{"alice", 1, nil, 0, 2}, // a new ID token of hers: the same person
		{"bob", 1, nil, 0, 4},
		{"bob", 0, nil, 0, 4},
		// Her token revoked before it expires: refused once, forgotten, exchanged for anew and the request sent
		// again; the other replica, which still holds the old one in memory, is refused once too, and takes the
		// new one from Redis.
		{"alice", 0, revoke, 1, 6},
		{"alice", 1, nil, 1, 6},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		tok := idp.token(t, st.person, audience)
		idTokens = append(idTokens, tok)
		cs := connectAs(ctx, t, "http://"+replicas[st.replica].ln.Addr().String()+"/mcp", tok)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crm__whoami"})
		if err != nil || res.IsError || toolText(res) != "Bearer "+accessTokenIn(st.person, st.round) {
			t.Errorf("%s through replica %d: %v %+v; want the upstream to see their own token of round %d", st.person, st.replica, err, res, st.round)
		}
		cs.Close()
		if n := issued(); n != st.issued {
			t.Errorf("%s through replica %d: %d tokens issued so far, want %d", st.person, st.replica, n, st.issued)
		}
	}
	if len(srv.forms) > 0 {
		t.Errorf("the IdP or the authorization server was asked wrongly: %q", srv.forms)
	}

	// Sealed at rest: every key and value under the prefix, scanned for the tokens.
	rc := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rc.Close()
	keys, err := rc.Keys(ctx, "switchboard:tokens:*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("token keys in Redis: %q, %v; want alice's and bob's", keys, err)
	}
	all, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	secrets := append(append([]string{"eyJ"}, idTokens...), srv.issued...)
	srv.mu.Unlock()
	for _, k := range all {
		var val string
		switch typ := rc.Type(ctx, k).Val(); typ {
		case "string":
			val = rc.Get(ctx, k).Val()
		case "hash":
			val = fmt.Sprint(rc.HGetAll(ctx, k).Val())
		}
		for _, sec := range secrets {
			if strings.Contains(k, sec) || strings.Contains(val, sec) {
				t.Errorf("Redis holds a token in the clear under %s", k)
			}
		}
	}
	out := logs.String()
	for _, sec := range secrets {
		if strings.Contains(out, sec) {
			t.Errorf("the log holds a token:\n%s", out)
			break
		}
	}
}

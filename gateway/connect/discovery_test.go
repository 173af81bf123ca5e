package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// httpsPublicURL is a public URL an authorization server could fetch a
// Client ID Metadata Document from.
const httpsPublicURL = "https://gateway.example"

// fakeUpstream is a user-oauth upstream and its authorization server on one
// origin: the MCP endpoint (/mcp, refusing anonymous calls with a
// challenge), its RFC 9728 metadata, the RFC 8414 metadata of its
// authorization server and a registration endpoint; authorize, token and
// revoke are its fakeAS's. Configure before use.
type fakeUpstream struct {
	base string // the origin, which is also the issuer
	as   *fakeAS

	// probeStatus is the MCP endpoint's answer (401 when 0); noChallenge
	// leaves out WWW-Authenticate.
	probeStatus int
	noChallenge bool
	// guardAfterInit lets an anonymous initialize in and challenges any
	// other request for scope "admin", as servers that guard only what
	// follows the handshake do.
	guardAfterInit bool
	// moved makes the metadata name the authorization server <base>/v2
	// (another issuer, same endpoints) instead of <base>.
	moved bool
	// cimd advertises Client ID Metadata Documents; noRegistration hides
	// the registration endpoint.
	cimd, noRegistration bool
	// metaStatus makes the authorization server's metadata fail.
	metaStatus int
	// regGate, when set, holds each registration until it is closed.
	regGate chan struct{}
	// regSecret issues a client secret expiring at regExpires (0: never).
	regSecret  bool
	regExpires int64

	mu         sync.Mutex
	probes     int
	metaHits   int
	registered []map[string]any
}

func newFakeUpstream(base string) *fakeUpstream {
	f := &fakeUpstream{base: base, as: newFakeAS()}
	if base != asIssuer {
		f.as.iss = base
	}
	return f
}

func (f *fakeUpstream) mcpURL() string { return f.base + "/mcp" }

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/mcp" && r.Method == http.MethodPost:
		f.mu.Lock()
		f.probes++
		status, challenge, guard := f.probeStatus, !f.noChallenge, f.guardAfterInit
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "the probe carried credentials", http.StatusBadRequest)
			return
		}
		var body struct{ Method string }
		err := json.NewDecoder(r.Body).Decode(&body)
		if guard && err == nil {
			if body.Method == "initialize" {
				w.WriteHeader(http.StatusOK)
				return
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="admin"`, f.base))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err != nil || body.Method != "initialize" {
			http.Error(w, "not an initialize", http.StatusBadRequest)
			return
		}
		if status == 0 {
			status = http.StatusUnauthorized
		}
		if status == http.StatusUnauthorized && challenge {
			w.Header().Add("WWW-Authenticate", `DPoP algs="ES256"`)
			w.Header().Add("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="read"`, f.base))
		}
		w.WriteHeader(status)
	case r.URL.Path == "/.well-known/oauth-protected-resource/mcp":
		f.mu.Lock()
		as := f.base
		if f.moved {
			as += "/v2"
		}
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"resource": f.mcpURL(), "authorization_servers": []string{as}, "scopes_supported": []string{"repo", "read", "admin"},
		})
	case r.URL.Path == "/.well-known/oauth-authorization-server" || r.URL.Path == "/.well-known/oauth-authorization-server/v2":
		f.mu.Lock()
		f.metaHits++
		status, cimd, reg := f.metaStatus, f.cimd, !f.noRegistration
		f.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		meta := map[string]any{
			"issuer":                           f.base + strings.TrimPrefix(r.URL.Path, "/.well-known/oauth-authorization-server"),
			"authorization_endpoint":           f.base + "/authorize",
			"token_endpoint":                   f.base + "/token",
			"revocation_endpoint":              f.base + "/revoke",
			"code_challenge_methods_supported": []string{"S256"},
			"authorization_response_iss_parameter_supported": true,
			"client_id_metadata_document_supported":          cimd,
		}
		if reg {
			meta["registration_endpoint"] = f.base + "/register"
		}
		writeJSON(w, http.StatusOK, meta)
	case r.URL.Path == "/register" && r.Method == http.MethodPost:
		f.register(w, r)
	default:
		f.as.ServeHTTP(w, r)
	}
}

func (f *fakeUpstream) register(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		oauthErr(w, "invalid_client_metadata", "not JSON")
		return
	}
	f.mu.Lock()
	f.registered = append(f.registered, body)
	n, gate := len(f.registered), f.regGate
	out := map[string]any{"client_id": fmt.Sprintf("dcr-%d", n), "token_endpoint_auth_method": "none"}
	if f.regSecret {
		out["client_secret"] = fmt.Sprintf("secret-%d", n)
		out["token_endpoint_auth_method"] = "client_secret_basic"
		out["client_secret_expires_at"] = f.regExpires
	}
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	writeJSON(w, http.StatusCreated, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// stats are what the fake saw: probes, metadata fetches, registrations.
func (f *fakeUpstream) stats() (probes, metaHits, registrations int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.probes, f.metaHits, len(f.registered)
}

// discoveryEnv is a Discovery over a fakeUpstream named "github".
type discoveryEnv struct {
	t      *testing.T
	up     *fakeUpstream
	store  *state.Memory
	sealer Sealer
	logs   *syncBuffer
	cfg    DiscoveryConfig
	d      *Discovery
}

// newDiscoveryEnv builds the env over an in-process fake at asIssuer; edit
// cfg and call build.
func newDiscoveryEnv(t *testing.T) *discoveryEnv {
	t.Helper()
	kr, err := vault.NewKeyring("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, vault.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	e := &discoveryEnv{t: t, up: newFakeUpstream(asIssuer), store: state.NewMemory(), sealer: kr, logs: &syncBuffer{}}
	e.cfg = DiscoveryConfig{
		Upstreams:  []UpstreamOAuth{{Name: "github", URL: e.up.mcpURL(), Scopes: []string{"repo"}}},
		PublicURL:  publicURL,
		ClientName: "Switchboard test",
		Store:      e.store,
		Sealer:     e.sealer,
		HTTPClient: &http.Client{Transport: handlerTransport{e.up}},
		Logger:     slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	t.Cleanup(func() {
		if strings.Contains(e.logs.String(), "secret-") {
			t.Errorf("a client secret reached the logs:\n%s", e.logs)
		}
	})
	return e
}

// build makes a Discovery of cfg (another replica at each call).
func (e *discoveryEnv) build() *Discovery {
	e.t.Helper()
	d, err := NewDiscovery(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.d = d
	return d
}

// authQuery starts flow and returns its authorization request's query.
func authQuery(t *testing.T, flow *upstreamauth.Flow) url.Values {
	t.Helper()
	_, raw := flow.Start()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// storedRegistration opens the stored registration for github.
func (e *discoveryEnv) storedRegistration() (registration, error) {
	sealed, err := e.store.GetRegistration(context.Background(), "github", e.up.base)
	if err != nil {
		return registration{}, err
	}
	plain, err := e.sealer.Open(sealed, registrationAAD("github", e.up.base))
	if err != nil {
		return registration{}, err
	}
	var reg registration
	return reg, json.Unmarshal(plain, &reg)
}

// TestDiscoveryIdentity: which client identity a discovery ends with, and
// the authorization request its flow makes, for each thing the
// authorization server offers and the gateway is configured with.
func TestDiscoveryIdentity(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *discoveryEnv)
		// wantClient is the client_id of the authorization request ("" for
		// an error wrapping wantErr).
		wantClient    string
		wantErr       error
		wantRegisters int
		wantScope     string
	}{
		{
			name: "pre-registered wins over the rest",
			setup: func(e *discoveryEnv) {
				e.up.cimd = true
				e.cfg.PublicURL = httpsPublicURL
				e.cfg.Upstreams[0].Client = &upstreamauth.Client{ID: "operator-client"}
			},
			wantClient: "operator-client",
			wantScope:  "repo read",
		},
		{
			name: "metadata document when advertised and the gateway is https",
			setup: func(e *discoveryEnv) {
				e.up.cimd = true
				e.cfg.PublicURL = httpsPublicURL
			},
			wantClient: MetadataDocumentURL(httpsPublicURL),
			wantScope:  "repo read",
		},
		{
			name:          "registration when the gateway is http on loopback, though the metadata document is advertised",
			setup:         func(e *discoveryEnv) { e.up.cimd = true },
			wantClient:    "dcr-1",
			wantRegisters: 1,
			wantScope:     "repo read",
		},
		{
			name:          "registration when the metadata document is not advertised",
			setup:         func(e *discoveryEnv) { e.cfg.PublicURL = httpsPublicURL },
			wantClient:    "dcr-1",
			wantRegisters: 1,
			wantScope:     "repo read",
		},
		{
			name:    "neither: configure a client",
			setup:   func(e *discoveryEnv) { e.up.noRegistration = true },
			wantErr: upstreamauth.ErrNoIdentity,
		},
		{
			name: "a 401 without a challenge: the well-known URLs",
			setup: func(e *discoveryEnv) {
				e.up.noChallenge = true
				e.cfg.Upstreams[0].Scopes = nil
			},
			wantClient:    "dcr-1",
			wantRegisters: 1,
			wantScope:     "repo read admin", // scopes_supported, the fallback
		},
		{
			name:          "a 400 to the probe: the well-known URLs",
			setup:         func(e *discoveryEnv) { e.up.probeStatus = http.StatusBadRequest },
			wantClient:    "dcr-1",
			wantRegisters: 1,
			wantScope:     "repo",
		},
		{
			name:    "the authorization server's metadata fails",
			setup:   func(e *discoveryEnv) { e.up.metaStatus = http.StatusInternalServerError },
			wantErr: errors.New("check that the gateway can reach the upstream and its authorization server"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newDiscoveryEnv(t)
			tc.setup(e)
			flow, err := e.build().Flow(context.Background(), "github")
			switch {
			case tc.wantErr != nil:
				if err == nil || (!errors.Is(err, tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr.Error())) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				q := authQuery(t, flow)
				if q.Get("client_id") != tc.wantClient || q.Get("scope") != tc.wantScope ||
					q.Get("redirect_uri") != CallbackURL(e.cfg.PublicURL) || q.Get("resource") != e.up.mcpURL() {
					t.Errorf("authorization request %v, want client_id %q, scope %q", q, tc.wantClient, tc.wantScope)
				}
			}
			if _, _, n := e.up.stats(); n != tc.wantRegisters {
				t.Errorf("%d registrations, want %d", n, tc.wantRegisters)
			}
		})
	}
}

// TestDiscoveryRegistersOnce: two replicas (two Discovery, one store) need
// a registration at once; one registers, the other waits for it and reads
// it, and a third replica later reuses the stored one. The registration
// endpoint holds the first registration until both are under way.
func TestDiscoveryRegistersOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newDiscoveryEnv(t)
		e.up.regGate = make(chan struct{})
		replicas := []*Discovery{e.build(), e.build()}
		got := make([]string, len(replicas))
		var wg sync.WaitGroup
		for i, d := range replicas {
			wg.Go(func() {
				flow, err := d.Flow(context.Background(), "github")
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
					return
				}
				got[i] = authQuery(t, flow).Get("client_id")
			})
		}
		synctest.Wait() // one registering, the other waiting
		if _, _, n := e.up.stats(); n != 1 {
			t.Errorf("%d registrations in flight, want 1", n)
		}
		close(e.up.regGate)
		wg.Wait()
		if got[0] != "dcr-1" || got[1] != "dcr-1" {
			t.Errorf("replicas use clients %q", got)
		}
		flow, err := e.build().Flow(context.Background(), "github")
		if err != nil {
			t.Fatal(err)
		}
		if id := authQuery(t, flow).Get("client_id"); id != "dcr-1" {
			t.Errorf("a third replica uses %q, want the stored dcr-1", id)
		}
		if _, _, n := e.up.stats(); n != 1 {
			t.Errorf("%d registrations, want 1", n)
		}
		e.up.mu.Lock()
		body := e.up.registered[0]
		e.up.mu.Unlock()
		if body["client_name"] != "Switchboard test" || fmt.Sprint(body["redirect_uris"]) != fmt.Sprint([]any{CallbackURL(publicURL)}) ||
			fmt.Sprint(body["grant_types"]) != "[authorization_code refresh_token]" || body["token_endpoint_auth_method"] != "none" {
			t.Errorf("registered %v", body)
		}
	})
}

// TestDiscoveryStoredRegistration: a stored registration is used while it
// fits, and replaced (one registration) when it does not.
func TestDiscoveryStoredRegistration(t *testing.T) {
	secret := func(left time.Duration) func(*registration) {
		return func(r *registration) {
			r.Client = upstreamauth.Client{ID: "stored", Secret: "secret-0", AuthMethod: upstreamauth.AuthSecretBasic, SecretExpiresAt: time.Now().Add(left)}
		}
	}
	cases := []struct {
		name string
		// edit changes the fitting registration stored (nil: none is);
		// run inside the bubble, for its clock.
		edit       func(*registration)
		sealedFor  string // the upstream it is sealed for ("" for github)
		wantClient string
	}{
		{"fits", func(*registration) {}, "", "stored"},
		{"none", nil, "", "dcr-1"},
		{"another redirect URI (the public URL changed)", func(r *registration) { r.RedirectURI = "https://old.example/connect/callback" }, "", "dcr-1"},
		{"fewer scopes than wanted", func(r *registration) { r.Scopes = []string{"repo"} }, "", "dcr-1"},
		{"its secret expires", secret(30 * time.Second), "", "dcr-1"},
		{"a secret with time left", secret(time.Hour), "", "stored"},
		{"sealed for another upstream's entry", func(*registration) {}, "linear", "dcr-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newDiscoveryEnv(t)
				if tc.edit != nil {
					reg := registration{Client: upstreamauth.Client{ID: "stored", AuthMethod: upstreamauth.AuthNone}, RedirectURI: CallbackURL(publicURL), Scopes: []string{"repo", "read"}}
					tc.edit(&reg)
					plain, _ := json.Marshal(reg)
					upstream := "github"
					if tc.sealedFor != "" {
						upstream = tc.sealedFor
					}
					sealed, err := e.sealer.Seal(plain, registrationAAD(upstream, e.up.base))
					if err != nil {
						t.Fatal(err)
					}
					if err := e.store.PutRegistration(context.Background(), "github", e.up.base, sealed); err != nil {
						t.Fatal(err)
					}
				}
				flow, err := e.build().Flow(context.Background(), "github")
				if err != nil {
					t.Fatal(err)
				}
				if id := authQuery(t, flow).Get("client_id"); id != tc.wantClient {
					t.Errorf("client %q, want %q", id, tc.wantClient)
				}
				wantRegisters := 0
				if tc.wantClient != "stored" {
					wantRegisters = 1
				}
				if _, _, n := e.up.stats(); n != wantRegisters {
					t.Errorf("%d registrations, want %d", n, wantRegisters)
				}
				reg, err := e.storedRegistration()
				if err != nil || reg.Client.ID != tc.wantClient || reg.RedirectURI != CallbackURL(publicURL) {
					t.Errorf("stored %+v, %v; want client %s", reg, err, tc.wantClient)
				}
			})
		})
	}
}

// TestDiscoveryCache: a discovery is reused for the TTL; a failure for 30
// seconds, with an error that says what to check, then retried.
func TestDiscoveryCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newDiscoveryEnv(t)
		e.cfg.TTL = 10 * time.Minute
		d := e.build()
		ctx := context.Background()
		e.up.metaStatus = http.StatusServiceUnavailable
		_, err := d.Flow(ctx, "github")
		if err == nil || !strings.Contains(err.Error(), "check that the gateway can reach") || !strings.Contains(err.Error(), "HTTP 503") {
			t.Fatalf("err %v, want the failure and what to check", err)
		}
		e.up.metaStatus = 0
		time.Sleep(failureTTL - time.Second)
		if _, again := d.Flow(ctx, "github"); again == nil || again.Error() != err.Error() {
			t.Errorf("within the failure window: %v, want the cached failure", again)
		}
		if probes, hits, _ := e.up.stats(); probes != 1 || hits != 1 {
			t.Errorf("%d probes, %d metadata fetches within the failure window, want 1, 1", probes, hits)
		}
		time.Sleep(2 * time.Second)
		flow, err := d.Flow(ctx, "github")
		if err != nil {
			t.Fatalf("after the failure window: %v", err)
		}
		time.Sleep(e.cfg.TTL - time.Second)
		if again, err := d.Flow(ctx, "github"); err != nil || again != flow {
			t.Errorf("within the TTL: another flow (%v)", err)
		}
		if probes, _, _ := e.up.stats(); probes != 2 {
			t.Errorf("%d probes within the TTL, want 2", probes)
		}
		time.Sleep(2 * time.Second)
		if again, err := d.Flow(ctx, "github"); err != nil || again == flow {
			t.Errorf("after the TTL: the same flow (%v)", err)
		}
		if probes, _, regs := e.up.stats(); probes != 3 || regs != 1 {
			t.Errorf("%d probes, %d registrations after the TTL, want 3, 1 (the stored one reused)", probes, regs)
		}
	})
}

// TestDiscoveryProbeAfterInitialize: an upstream that lets an anonymous
// initialize in is probed once more with a request that needs a token, and
// its challenge's scope is asked for (the scope-step-up scenario's first
// authorization).
func TestDiscoveryProbeAfterInitialize(t *testing.T) {
	e := newDiscoveryEnv(t)
	e.up.guardAfterInit = true
	flow, err := e.build().Flow(context.Background(), "github")
	if err != nil {
		t.Fatal(err)
	}
	if got := authQuery(t, flow).Get("scope"); got != "repo admin" {
		t.Errorf("scope %q, want the configured and the challenge's: \"repo admin\"", got)
	}
	if probes, _, _ := e.up.stats(); probes != 2 {
		t.Errorf("%d probes, want 2 (initialize, then tools/list)", probes)
	}
}

// TestDiscoveryMoved (SEP-2352): after a 401, an upstream whose metadata
// names another authorization server has its cached flow dropped; the next
// Flow is the new server's, with a registration of its own, and a grant of
// the old server is deleted rather than refreshed at the new one. Moved
// looks again only after 10 seconds, and an unmoved server is no move.
func TestDiscoveryMoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newDiscoveryEnv(t)
		d := e.build()
		ctx := context.Background()
		old, err := d.Flow(ctx, "github")
		if err != nil {
			t.Fatal(err)
		}
		if d.Moved(ctx, "github", upstreamauth.Challenge{}) {
			t.Error("Moved while the metadata names the same server")
		}
		e.up.moved = true
		if d.Moved(ctx, "github", upstreamauth.Challenge{}) {
			t.Error("Moved looked again within 10 seconds")
		}
		time.Sleep(movedEvery)
		if !d.Moved(ctx, "github", upstreamauth.Challenge{}) {
			t.Fatal("the metadata names another server, and Moved says no")
		}
		flow, err := d.Flow(ctx, "github")
		if err != nil || flow == old || flow.Issuer() != e.up.base+"/v2" {
			t.Fatalf("after the move: %v, issuer %q", err, flow.Issuer())
		}
		if _, _, regs := e.up.stats(); regs != 2 {
			t.Errorf("%d registrations, want one per server", regs)
		}
		// A grant of the old server is not refreshed at the new one.
		env := newEnv(t)
		tk, err := NewTokens(TokensConfig{Store: env.store, Flows: d, Sealer: env.sealer, Logger: env.tokens.log})
		if err != nil {
			t.Fatal(err)
		}
		env.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-1-secretish", Issuer: old.Issuer(), Expiry: time.Now().Add(time.Hour)})
		if _, err := tk.Refresh(ctx, alice.Key(), "github", "at-1-secretish"); !errIs(err, ErrNotConnected) {
			t.Errorf("refreshing a grant of the old server: %v, want ErrNotConnected", err)
		}
		if _, err := env.grant(alice); err == nil {
			t.Error("the old server's grant is still stored")
		}
		if n, _ := e.up.as.counts(); n != 0 {
			t.Errorf("%d refreshes sent, want none", n)
		}
	})
}

// TestDiscoveryShared: callers that need one discovery at once share it.
func TestDiscoveryShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newDiscoveryEnv(t)
		e.up.regGate = make(chan struct{})
		d := e.build()
		flows := make([]*upstreamauth.Flow, 8)
		var wg sync.WaitGroup
		for i := range flows {
			wg.Go(func() {
				f, err := d.Flow(context.Background(), "github")
				if err != nil {
					t.Error(err)
				}
				flows[i] = f
			})
		}
		synctest.Wait()
		close(e.up.regGate)
		wg.Wait()
		for _, f := range flows {
			if f == nil || f != flows[0] {
				t.Fatal("callers got different flows")
			}
		}
		if probes, hits, regs := e.up.stats(); probes != 1 || hits != 1 || regs != 1 {
			t.Errorf("%d probes, %d metadata fetches, %d registrations; want one each", probes, hits, regs)
		}
	})
}

// TestDiscoveryForget: when the token endpoint rejects the registered
// client, Tokens has the flow forgotten, and the next discovery registers
// again (once) instead of reading back the rejected registration.
func TestDiscoveryForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newDiscoveryEnv(t)
		d := e.build()
		ctx := context.Background()
		if _, err := d.Flow(ctx, "github"); err != nil {
			t.Fatal(err)
		}
		tk, err := NewTokens(TokensConfig{Store: e.store, Flows: d, Sealer: e.sealer, Logger: e.cfg.Logger})
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := sealGrant(e.sealer, alice.Key(), "github", grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(-time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.PutGrant(ctx, alice.Key(), "github", sealed); err != nil {
			t.Fatal(err)
		}
		e.up.as.refuseClient = true
		if _, err := tk.Token(ctx, alice.Key(), "github"); err == nil || errors.Is(err, ErrNotConnected) {
			t.Fatalf("Token with the client refused: %v, want a failure that keeps the grant", err)
		}
		other := e.build() // another replica, which saw the rejection too
		if _, err := other.Flow(ctx, "github"); err != nil {
			t.Fatal(err)
		}
		other.Forget("github")
		for i, dd := range []*Discovery{d, other} {
			flow, err := dd.Flow(ctx, "github")
			if err != nil {
				t.Fatal(err)
			}
			if id := authQuery(t, flow).Get("client_id"); id != "dcr-2" {
				t.Errorf("replica %d uses %q after the rejection, want dcr-2", i, id)
			}
		}
		if _, _, n := e.up.stats(); n != 2 {
			t.Errorf("%d registrations, want 2 (the first, and one after the rejection)", n)
		}
		d.Forget("nope") // unknown: nothing to forget
	})
}

// TestDiscoveryUpstreams: an unknown upstream, and the configured scopes.
func TestDiscoveryUpstreams(t *testing.T) {
	e := newDiscoveryEnv(t)
	d := e.build()
	if _, err := d.Flow(context.Background(), "gitlab"); !errors.Is(err, ErrUnknownUpstream) {
		t.Errorf("Flow of an unknown upstream: %v, want ErrUnknownUpstream", err)
	}
	if p, _, _ := e.up.stats(); p != 0 {
		t.Errorf("%d probes for an unknown upstream", p)
	}
	s := d.Scopes("github")
	if !slices.Equal(s, []string{"repo"}) {
		t.Errorf("Scopes(github) = %q", s)
	}
	s[0] = "changed"
	e.cfg.Upstreams[0].Scopes[0] = "changed too"
	if s := d.Scopes("github"); !slices.Equal(s, []string{"repo"}) {
		t.Errorf("Scopes(github) after changing copies = %q", s)
	}
	if s := d.Scopes("gitlab"); s != nil {
		t.Errorf("Scopes(gitlab) = %q, want nil", s)
	}
}

// TestNewDiscoveryRefuses: what NewDiscovery refuses.
func TestNewDiscoveryRefuses(t *testing.T) {
	e := newDiscoveryEnv(t)
	good := e.cfg
	for _, tc := range []struct {
		name string
		edit func(c *DiscoveryConfig)
	}{
		{"no store", func(c *DiscoveryConfig) { c.Store = nil }},
		{"no sealer", func(c *DiscoveryConfig) { c.Sealer = nil }},
		{"no upstreams", func(c *DiscoveryConfig) { c.Upstreams = nil }},
		{"an http public URL", func(c *DiscoveryConfig) { c.PublicURL = "http://gateway.example" }},
		{"a negative TTL", func(c *DiscoveryConfig) { c.TTL = -time.Second }},
		{"an unnamed upstream", func(c *DiscoveryConfig) { c.Upstreams = []UpstreamOAuth{{URL: mcpResource}} }},
		{"an upstream twice", func(c *DiscoveryConfig) { c.Upstreams = append(slices.Clone(c.Upstreams), c.Upstreams[0]) }},
		{"an http upstream", func(c *DiscoveryConfig) {
			c.Upstreams = []UpstreamOAuth{{Name: "github", URL: "http://mcp.example/mcp"}}
		}},
		{"a client without an id", func(c *DiscoveryConfig) {
			c.Upstreams = []UpstreamOAuth{{Name: "github", URL: mcpResource, Client: &upstreamauth.Client{Secret: "s"}}}
		}},
	} {
		cfg := good
		tc.edit(&cfg)
		if _, err := NewDiscovery(cfg); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// TestDiscoveryConnect is the whole way over real HTTP: the Handler and
// Tokens run on a Discovery of a fake upstream served by httptest; the
// gateway registers, the person connects, the token refreshes.
func TestDiscoveryConnect(t *testing.T) {
	up := newFakeUpstream("")
	srv := httptest.NewServer(up)
	defer srv.Close()
	up.base = srv.URL
	up.as.iss = srv.URL
	e := newEnv(t)
	de := newDiscoveryEnv(t)
	de.cfg.Store = e.store
	de.cfg.Sealer = e.sealer
	de.cfg.HTTPClient = srv.Client()
	de.cfg.Upstreams = []UpstreamOAuth{{Name: "github", URL: up.mcpURL(), Scopes: []string{"repo"}}}
	de.cfg.Logger = e.tokens.log
	d := de.build()
	h, err := NewHandler(HandlerConfig{Store: e.store, Flows: d, Sealer: e.sealer, Notifier: e.notes, User: userFromHeader, Logger: e.tokens.log})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	if e.tokens, err = NewTokens(TokensConfig{Store: e.store, Flows: d, Sealer: e.sealer, Logger: e.tokens.log}); err != nil {
		t.Fatal(err)
	}
	e.as = up.as // authorize follows the AS in process: the same handler

	w := e.get(e.link(alice), "alice")
	if w.Code != http.StatusFound || !strings.HasPrefix(w.Header().Get("Location"), srv.URL+"/authorize?") {
		t.Fatalf("link: HTTP %d to %q", w.Code, w.Header().Get("Location"))
	}
	loc, _ := url.Parse(w.Header().Get("Location"))
	if q := loc.Query(); q.Get("client_id") != "dcr-1" || q.Get("resource") != up.mcpURL() || q.Get("scope") != "repo read" {
		t.Errorf("authorization request %v", q)
	}
	// authorize follows the redirect to the AS in process, whatever the host.
	w = e.get(e.authorize(w), "alice")
	if w.Code != http.StatusOK {
		t.Fatalf("callback: HTTP %d: %s", w.Code, w.Body)
	}
	g, err := e.grant(alice)
	if err != nil {
		t.Fatal(err)
	}
	e.putGrant(alice, grant{AccessToken: g.AccessToken, RefreshToken: g.RefreshToken, Expiry: time.Now().Add(-time.Second)})
	tok, err := e.tokens.Token(context.Background(), alice.Key(), "github")
	if err != nil || tok.AccessToken == g.AccessToken {
		t.Fatalf("Token after expiry: %v (refreshed: %t)", err, tok != nil && tok.AccessToken != g.AccessToken)
	}
	if _, _, n := up.stats(); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
}

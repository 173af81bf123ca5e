package upstreamauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/auth"
	"golang.org/x/oauth2"
)

// redirectURL is the gateway's callback in the tests; nothing listens
// there, the fake's redirect is read, not followed.
const redirectURL = "http://127.0.0.1:9/connect/callback"

const clientSecret = "client-secretish"

// testFlow discovers the fake and builds a flow as cfg says (Server,
// RedirectURL and HTTPClient are filled in when unset).
func testFlow(t *testing.T, as *fakeAS, cfg FlowConfig) *Flow {
	t.Helper()
	if cfg.Server == nil {
		srv, err := Discover(context.Background(), as.srv.Client(), as.mcpURL(), Challenge{})
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
		cfg.Server = srv
	}
	if cfg.RedirectURL == "" {
		cfg.RedirectURL = redirectURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = as.srv.Client()
	}
	if cfg.Client.ID == "" {
		cfg.Client.ID = "gateway"
	}
	f, err := NewFlow(cfg)
	if err != nil {
		t.Fatalf("NewFlow: %v", err)
	}
	return f
}

// connect runs a whole authorization and returns its token.
func connect(t *testing.T, as *fakeAS, f *Flow) *oauth2.Token {
	t.Helper()
	p, authURL := f.Start()
	tok, err := f.Finish(context.Background(), p, as.authorizeVia(t, authURL, redirectURL))
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return tok
}

func TestFlow(t *testing.T) {
	tests := []struct {
		name         string
		client       Client
		omitResource bool
		wantAuth     string // how the token request authenticated
	}{
		{name: "public client, resource sent", client: Client{ID: "gateway"}, wantAuth: "body"},
		{name: "public client, resource omitted", client: Client{ID: "gateway"}, omitResource: true, wantAuth: "body"},
		{name: "client_secret_basic", client: Client{ID: "gw:1", Secret: clientSecret}, wantAuth: "basic"},
		{name: "client_secret_post", client: Client{ID: "gateway", Secret: clientSecret, AuthMethod: AuthSecretPost}, wantAuth: "post"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.clientSecret = tt.client.Secret
			f := testFlow(t, as, FlowConfig{Client: tt.client, Scopes: []string{"repo", "read:user"}, OmitResource: tt.omitResource})
			p, authURL := f.Start()

			if p.Issuer != as.issuer() || p.Resource != as.mcpURL() || p.CreatedAt.IsZero() || len(p.State) < 26 || len(p.Verifier) < 43 {
				t.Errorf("pending %+v", p)
			}
			u, err := url.Parse(authURL)
			if err != nil || !strings.HasPrefix(authURL, as.srv.URL+"/authorize?") {
				t.Fatalf("authorization URL %s", authURL)
			}
			want := url.Values{
				"response_type":         {"code"},
				"client_id":             {tt.client.ID},
				"redirect_uri":          {redirectURL},
				"scope":                 {"repo read:user"},
				"state":                 {p.State},
				"code_challenge_method": {"S256"},
				// PKCE: code_challenge = BASE64URL(SHA256(verifier)), computed
				// here independently of x/oauth2.
				"code_challenge": {s256(p.Verifier)},
			}
			if !tt.omitResource {
				want.Set("resource", as.mcpURL())
			}
			if got := u.Query(); !reflect.DeepEqual(got, want) {
				t.Errorf("authorization request\n got %v\nwant %v", got, want)
			}

			tok, err := f.Finish(context.Background(), p, as.authorizeVia(t, authURL, redirectURL))
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if !strings.HasPrefix(tok.AccessToken, "at-") || !strings.HasPrefix(tok.RefreshToken, "rt-") || tok.Expiry.IsZero() {
				t.Errorf("token %+v", tok)
			}
			_, _, forms, _, _ := as.snapshot()
			if len(forms) != 1 {
				t.Fatalf("token requests: %v", forms)
			}
			form := forms[0]
			if form.Get("grant_type") != "authorization_code" || form.Get("code_verifier") != p.Verifier || form.Get("redirect_uri") != redirectURL {
				t.Errorf("token request %v", form)
			}
			if got, want := form["resource"], []string{as.mcpURL()}; tt.omitResource && got != nil || !tt.omitResource && !reflect.DeepEqual(got, want) {
				t.Errorf("token request resource %q (omitted: %v)", got, tt.omitResource)
			}
			switch auth := form.Get("client_secret"); tt.wantAuth {
			case "body", "basic":
				if auth != "" {
					t.Errorf("secret in the body: %v", form)
				}
			case "post":
				if auth != clientSecret {
					t.Errorf("no secret in the body: %v", form)
				}
			}
		})
	}
}

func TestFinishPKCEVerifiedByServer(t *testing.T) {
	as := newFakeAS(t)
	f := testFlow(t, as, FlowConfig{})
	p, authURL := f.Start()
	cb := as.authorizeVia(t, authURL, redirectURL)
	p.Verifier = oauth2.GenerateVerifier() // not the one the challenge was made from
	_, err := f.Finish(context.Background(), p, cb)
	var oe *OAuthError
	if !errors.As(err, &oe) || oe.Code != "invalid_grant" || oe.Endpoint != EndpointToken || oe.StatusCode != 400 || !strings.Contains(oe.Description, "PKCE") {
		t.Fatalf("Finish with another verifier: %v; want the server's invalid_grant", err)
	}
}

func TestFinishState(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Pending, cb url.Values)
	}{
		{name: "another state", change: func(_ *Pending, cb url.Values) { cb.Set("state", "another") }},
		{name: "a state one character longer", change: func(p *Pending, cb url.Values) { cb.Set("state", p.State+"x") }},
		{name: "no state", change: func(_ *Pending, cb url.Values) { cb.Del("state") }},
		{name: "state repeated", change: func(p *Pending, cb url.Values) { cb.Add("state", p.State) }},
		{name: "an empty pending state matching an empty one", change: func(p *Pending, cb url.Values) { p.State = ""; cb.Set("state", "") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			f := testFlow(t, as, FlowConfig{})
			p, authURL := f.Start()
			cb := as.authorizeVia(t, authURL, redirectURL)
			tt.change(&p, cb)
			if _, err := f.Finish(context.Background(), p, cb); !errors.Is(err, ErrStateMismatch) {
				t.Fatalf("Finish: %v; want ErrStateMismatch", err)
			}
			if _, _, forms, _, _ := as.snapshot(); len(forms) != 0 {
				t.Errorf("the code was exchanged anyway: %v", forms)
			}
		})
	}
}

func TestFinishReplay(t *testing.T) {
	as := newFakeAS(t)
	f := testFlow(t, as, FlowConfig{})
	p, authURL := f.Start()
	cb := as.authorizeVia(t, authURL, redirectURL)
	if _, err := f.Finish(context.Background(), p, cb); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	// The same callback again (a caller that failed to delete its Pending):
	// the server refuses a code used twice.
	_, err := f.Finish(context.Background(), p, cb)
	var oe *OAuthError
	if !errors.As(err, &oe) || oe.Code != "invalid_grant" {
		t.Fatalf("replayed Finish: %v; want invalid_grant", err)
	}
}

func TestFinishIss(t *testing.T) {
	tests := []struct {
		name       string
		advertised bool
		iss        string // "right" for the issuer
		repeat     bool
		wantErr    error
	}{
		{name: "advertised, present and right", advertised: true, iss: "right"},
		{name: "advertised, missing", advertised: true, wantErr: ErrMixUp},
		{name: "advertised, wrong", advertised: true, iss: "https://evil.example", wantErr: ErrMixUp},
		{name: "advertised, differing by a slash", advertised: true, iss: "right/", wantErr: ErrMixUp},
		{name: "advertised, repeated", advertised: true, iss: "right", repeat: true, wantErr: ErrMixUp},
		{name: "not advertised, missing", advertised: false},
		{name: "not advertised, present and right", advertised: false, iss: "right"},
		{name: "not advertised, wrong", advertised: false, iss: "https://evil.example", wantErr: ErrMixUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.meta = map[string]any{"authorization_response_iss_parameter_supported": tt.advertised}
			as.iss = strings.Replace(tt.iss, "right", as.issuer(), 1)
			as.issRepeat = tt.repeat
			f := testFlow(t, as, FlowConfig{})
			p, authURL := f.Start()
			_, err := f.Finish(context.Background(), p, as.authorizeVia(t, authURL, redirectURL))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Finish: %v; want %v", err, tt.wantErr)
			}
			if _, _, forms, _, _ := as.snapshot(); tt.wantErr != nil && len(forms) != 0 {
				t.Errorf("the code was exchanged anyway: %v", forms)
			}
		})
	}
}

func TestFinishServerError(t *testing.T) {
	tests := []struct {
		name    string
		iss     string
		wantErr error
	}{
		{name: "access_denied"},
		{name: "an error from another issuer is a mix-up first", iss: "https://evil.example", wantErr: ErrMixUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.denyWith = "access_denied"
			as.iss = tt.iss
			f := testFlow(t, as, FlowConfig{})
			p, authURL := f.Start()
			_, err := f.Finish(context.Background(), p, as.authorizeVia(t, authURL, redirectURL))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Finish: %v; want %v", err, tt.wantErr)
				}
				return
			}
			var oe *OAuthError
			if !errors.As(err, &oe) {
				t.Fatalf("Finish: %v; want an OAuthError", err)
			}
			want := OAuthError{Endpoint: EndpointAuthorization, Code: "access_denied", Description: "The user said no"}
			if *oe != want {
				t.Errorf("got %+v, want %+v", *oe, want)
			}
		})
	}
}

func TestFinishRefuses(t *testing.T) {
	as := newFakeAS(t)
	f := testFlow(t, as, FlowConfig{})
	tests := []struct {
		name    string
		change  func(p *Pending, cb url.Values)
		wantErr error
	}{
		{name: "no code", change: func(_ *Pending, cb url.Values) { cb.Del("code") }, wantErr: ErrNoCode},
		{name: "code repeated", change: func(_ *Pending, cb url.Values) { cb.Add("code", "other") }, wantErr: ErrNoCode},
		{name: "started for another issuer", change: func(p *Pending, _ url.Values) { p.Issuer = "https://other.example" }, wantErr: ErrWrongFlow},
		{name: "started for another resource", change: func(p *Pending, _ url.Values) { p.Resource = "https://other.example/mcp" }, wantErr: ErrWrongFlow},
		{name: "no creation time", change: func(p *Pending, _ url.Values) { p.CreatedAt = time.Time{} }, wantErr: ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := f.Start()
			cb := url.Values{"state": {p.State}, "code": {"code-x"}}
			tt.change(&p, cb)
			if _, err := f.Finish(context.Background(), p, cb); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Finish: %v; want %v", err, tt.wantErr)
			}
		})
	}
	if _, _, forms, _, _ := as.snapshot(); len(forms) != 0 {
		t.Errorf("a code was exchanged: %v", forms)
	}
}

func TestFinishExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// No request is made: the checks come first.
		f, err := NewFlow(FlowConfig{
			Server: &Server{
				Resource: "https://mcp.example/mcp", Issuer: "https://as.example",
				AuthorizationEndpoint: "https://as.example/authorize", TokenEndpoint: "https://as.example/token",
				CodeChallengeMethods: []string{"S256"},
			},
			Client:      Client{ID: "gateway"},
			RedirectURL: "https://gw.example/connect/callback",
			MaxAge:      5 * time.Minute,
		})
		if err != nil {
			t.Fatalf("NewFlow: %v", err)
		}
		p, _ := f.Start()
		time.Sleep(5 * time.Minute)
		// At the limit: still alive, so the state is what is checked.
		if _, err := f.Finish(context.Background(), p, url.Values{"state": {"other"}}); !errors.Is(err, ErrStateMismatch) {
			t.Fatalf("Finish at MaxAge: %v; want ErrStateMismatch", err)
		}
		time.Sleep(time.Nanosecond)
		if _, err := f.Finish(context.Background(), p, url.Values{"state": {p.State}, "code": {"c"}}); !errors.Is(err, ErrExpired) {
			t.Fatalf("Finish past MaxAge: %v; want ErrExpired", err)
		}
	})
}

// TestFinishTokenType: a Bearer token is always taken; a DPoP one only when the flow has a DPoP key and the
// server offers ES256, and then every token request carries a proof of that key (RFC 9449 §5).
func TestFinishTokenType(t *testing.T) {
	key, err := auth.NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		tokenType  string
		algs       []string // the AS's dpop_signing_alg_values_supported (nil: not offered)
		resource   bool     // the resource's metadata lists ES256 (RFC 9728 §2)
		key        *auth.DPoPKey
		wantType   string // "" for a refusal
		wantProofs bool
	}{
		{name: "bearer", tokenType: "Bearer", wantType: "Bearer"},
		{name: "bearer, dpop offered", tokenType: "Bearer", algs: []string{"ES256"}, resource: true, key: key, wantType: "Bearer", wantProofs: true},
		{name: "dpop without a key", tokenType: "DPoP", algs: []string{"ES256"}, resource: true},
		{name: "dpop not offered", tokenType: "DPoP", resource: true, key: key},
		{name: "dpop not taken by the resource", tokenType: "DPoP", algs: []string{"ES256"}, key: key},
		{name: "dpop without ES256", tokenType: "DPoP", algs: []string{"RS256"}, resource: true, key: key},
		{name: "dpop", tokenType: "dpop", algs: []string{"ES256", "RS256"}, resource: true, key: key, wantType: "DPoP", wantProofs: true},
		{name: "mac", tokenType: "mac", algs: []string{"ES256"}, resource: true, key: key, wantProofs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.tokenType = tt.tokenType
			if tt.algs != nil {
				as.meta = map[string]any{"dpop_signing_alg_values_supported": tt.algs}
			}
			if tt.resource {
				as.prm = map[string]any{"dpop_signing_alg_values_supported": []string{"ES256"}}
			}
			f := testFlow(t, as, FlowConfig{DPoP: tt.key})
			p, authURL := f.Start()
			tok, err := f.Finish(context.Background(), p, as.authorizeVia(t, authURL, redirectURL))
			switch {
			case tt.wantType == "" && err == nil:
				t.Fatalf("Finish took token_type %q", tt.tokenType)
			case tt.wantType == "" && !strings.Contains(err.Error(), "not Bearer"):
				t.Fatalf("Finish: %v; want a refusal of the token type", err)
			case tt.wantType != "" && err != nil:
				t.Fatalf("Finish: %v", err)
			case tt.wantType != "" && tok.TokenType != tt.wantType:
				t.Fatalf("token_type %q, want %q", tok.TokenType, tt.wantType)
			}
			as.mu.Lock()
			proofs := slices.Clone(as.dpopProofs)
			as.mu.Unlock()
			for _, p := range proofs {
				if (p != "") != tt.wantProofs {
					t.Fatalf("token request DPoP header %q; want one: %v", p, tt.wantProofs)
				}
			}
		})
	}
}

func TestRefresh(t *testing.T) {
	tests := []struct {
		name         string
		rotate       bool
		omitResource bool
	}{
		{name: "rotated", rotate: true},
		{name: "not rotated", rotate: false},
		{name: "rotated, resource omitted", rotate: true, omitResource: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.rotate = tt.rotate
			as.clientSecret = clientSecret
			f := testFlow(t, as, FlowConfig{Client: Client{ID: "gateway", Secret: clientSecret}, OmitResource: tt.omitResource})
			tok := connect(t, as, f)

			nt, rotated, err := f.Refresh(context.Background(), tok)
			if err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if rotated != tt.rotate {
				t.Errorf("rotated = %v, want %v", rotated, tt.rotate)
			}
			if nt.AccessToken == tok.AccessToken || !strings.HasPrefix(nt.AccessToken, "at-") {
				t.Errorf("access token %q after %q", nt.AccessToken, tok.AccessToken)
			}
			if (nt.RefreshToken != tok.RefreshToken) != tt.rotate || nt.RefreshToken == "" {
				t.Errorf("refresh token %q after %q", nt.RefreshToken, tok.RefreshToken)
			}
			_, _, forms, _, _ := as.snapshot()
			form := forms[len(forms)-1]
			if form.Get("grant_type") != "refresh_token" || form.Get("refresh_token") != tok.RefreshToken {
				t.Errorf("refresh request %v", form)
			}
			if got := form["resource"]; tt.omitResource && got != nil || !tt.omitResource && !reflect.DeepEqual(got, []string{as.mcpURL()}) {
				t.Errorf("refresh request resource %q (omitted: %v)", got, tt.omitResource)
			}

			// The old refresh token again: dead after a rotation, alive
			// otherwise.
			_, _, err = f.Refresh(context.Background(), tok)
			var oe *OAuthError
			if tt.rotate && (!errors.As(err, &oe) || oe.Code != "invalid_grant") {
				t.Errorf("Refresh with the rotated-out token: %v; want invalid_grant", err)
			}
			if !tt.rotate && err != nil {
				t.Errorf("Refresh again: %v", err)
			}
			// The new one works.
			if _, _, err := f.Refresh(context.Background(), nt); err != nil {
				t.Errorf("Refresh with the new token: %v", err)
			}
		})
	}
}

func TestRefreshWithoutRefreshToken(t *testing.T) {
	as := newFakeAS(t)
	f := testFlow(t, as, FlowConfig{})
	for _, tok := range []*oauth2.Token{nil, {AccessToken: "at"}} {
		if _, _, err := f.Refresh(context.Background(), tok); !errors.Is(err, ErrNoRefreshToken) {
			t.Errorf("Refresh(%v): %v; want ErrNoRefreshToken", tok, err)
		}
	}
}

func TestRevoke(t *testing.T) {
	tests := []struct {
		name   string
		client Client
		want   url.Values
	}{
		{name: "public client", client: Client{ID: "gateway"}, want: url.Values{"client_id": {"gateway"}, "token_type_hint": {"refresh_token"}}},
		{name: "client_secret_basic", client: Client{ID: "gateway", Secret: clientSecret}, want: url.Values{"token_type_hint": {"refresh_token"}}},
		{name: "client_secret_post", client: Client{ID: "gateway", Secret: clientSecret, AuthMethod: AuthSecretPost},
			want: url.Values{"client_id": {"gateway"}, "client_secret": {clientSecret}, "token_type_hint": {"refresh_token"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.clientSecret = tt.client.Secret
			f := testFlow(t, as, FlowConfig{Client: tt.client})
			tok := connect(t, as, f)
			if err := f.Revoke(context.Background(), tok.RefreshToken, HintRefreshToken); err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			_, _, _, revoked, _ := as.snapshot()
			tt.want.Set("token", tok.RefreshToken)
			if len(revoked) != 1 || !reflect.DeepEqual(revoked[0], tt.want) {
				t.Errorf("revocation requests\n got %v\nwant %v", revoked, tt.want)
			}
			var oe *OAuthError
			if _, _, err := f.Refresh(context.Background(), tok); !errors.As(err, &oe) || oe.Code != "invalid_grant" {
				t.Errorf("Refresh after Revoke: %v; want invalid_grant", err)
			}
		})
	}
}

func TestRevokeRefused(t *testing.T) {
	as := newFakeAS(t)
	f := testFlow(t, as, FlowConfig{})
	err := f.Revoke(context.Background(), "some-token", "bogus")
	var oe *OAuthError
	if !errors.As(err, &oe) || oe.Code != "unsupported_token_type" || oe.Endpoint != EndpointRevocation || oe.StatusCode != 400 {
		t.Fatalf("Revoke: %v; want unsupported_token_type", err)
	}
}

func TestRevokeNotOffered(t *testing.T) {
	as := newFakeAS(t)
	as.meta = map[string]any{"revocation_endpoint": nil}
	f := testFlow(t, as, FlowConfig{})
	if err := f.Revoke(context.Background(), "some-token", HintAccessToken); !errors.Is(err, ErrNoRevocation) {
		t.Fatalf("Revoke: %v; want ErrNoRevocation", err)
	}
	if _, _, _, revoked, _ := as.snapshot(); len(revoked) != 0 {
		t.Errorf("sent %v", revoked)
	}
}

// TestNoSecretInErrors drives every failure that involves a secret against
// a server that echoes what it is sent, and checks that no error string
// carries one. The fake's codes and tokens all contain "secretish".
func TestNoSecretInErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, as *fakeAS, f *Flow) ([]string, error)
	}{
		{
			name: "token endpoint refusal echoing code, verifier and Basic credentials",
			run: func(t *testing.T, as *fakeAS, f *Flow) ([]string, error) {
				p, authURL := f.Start()
				cb := as.authorizeVia(t, authURL, redirectURL)
				p.Verifier = oauth2.GenerateVerifier()
				_, err := f.Finish(context.Background(), p, cb)
				return []string{p.Verifier}, err
			},
		},
		{
			name: "token endpoint failing with an HTML page repeating the request",
			run: func(t *testing.T, as *fakeAS, f *Flow) ([]string, error) {
				as.failStatus = 500
				p, authURL := f.Start()
				_, err := f.Finish(context.Background(), p, as.authorizeVia(t, authURL, redirectURL))
				return []string{p.Verifier}, err
			},
		},
		{
			name: "refresh refusal echoing the refresh token",
			run: func(t *testing.T, _ *fakeAS, f *Flow) ([]string, error) {
				_, _, err := f.Refresh(context.Background(), &oauth2.Token{AccessToken: "at-old-secretish", RefreshToken: "rt/unknown+secretish"})
				return nil, err
			},
		},
		{
			name: "revocation refusal echoing the token",
			run: func(t *testing.T, _ *fakeAS, f *Flow) ([]string, error) {
				return nil, f.Revoke(context.Background(), "rt-revoke-secretish", "bogus")
			},
		},
		{
			name: "authorization error whose description repeats the code",
			run: func(t *testing.T, _ *fakeAS, f *Flow) ([]string, error) {
				p, _ := f.Start()
				_, err := f.Finish(context.Background(), p, url.Values{
					"state": {p.State}, "code": {"code-9-secretish"}, "error": {"server_error"},
					"error_description": {"could not store code-9-secretish for verifier " + p.Verifier},
				})
				return []string{p.Verifier}, err
			},
		},
		{
			name: "state mismatch",
			run: func(t *testing.T, as *fakeAS, f *Flow) ([]string, error) {
				p, authURL := f.Start()
				cb := as.authorizeVia(t, authURL, redirectURL)
				cb.Set("state", "x")
				_, err := f.Finish(context.Background(), p, cb)
				return []string{p.Verifier}, err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.echo = true
			as.clientSecret = clientSecret
			f := testFlow(t, as, FlowConfig{Client: Client{ID: "gateway", Secret: clientSecret}})
			secrets, err := tt.run(t, as, f)
			if err == nil {
				t.Fatal("no error")
			}
			msg := fmt.Sprintf("%v %+v %#v", err, err, err)
			for _, s := range append(secrets, "secretish", clientSecret, url.QueryEscape("rt/unknown+secretish")) {
				if strings.Contains(msg, s) {
					t.Errorf("the error shows %q: %s", s, msg)
				}
			}
		})
	}
}

func TestNewFlowRefuses(t *testing.T) {
	good := func() FlowConfig {
		return FlowConfig{
			Server: &Server{
				Resource: "https://mcp.example/mcp", Issuer: "https://as.example",
				AuthorizationEndpoint: "https://as.example/authorize", TokenEndpoint: "https://as.example/token",
				CodeChallengeMethods: []string{"S256"},
			},
			Client:      Client{ID: "gateway"},
			RedirectURL: "https://gw.example/connect/callback",
		}
	}
	if _, err := NewFlow(good()); err != nil {
		t.Fatalf("NewFlow(good): %v", err)
	}
	tests := []struct {
		name    string
		change  func(c *FlowConfig)
		wantIs  error
		wantSub string
	}{
		{name: "no server", change: func(c *FlowConfig) { c.Server = nil }, wantSub: "no server"},
		{name: "no S256", change: func(c *FlowConfig) { c.Server.CodeChallengeMethods = []string{"plain"} }, wantIs: ErrNoPKCE},
		{name: "no issuer", change: func(c *FlowConfig) { c.Server.Issuer = "" }, wantSub: "issuer"},
		{name: "plain http redirect", change: func(c *FlowConfig) { c.RedirectURL = "http://gw.example/cb" }, wantIs: ErrInsecureURL},
		{name: "plain http token endpoint", change: func(c *FlowConfig) { c.Server.TokenEndpoint = "http://as.example/token" }, wantIs: ErrInsecureURL},
		{name: "plain http revocation endpoint", change: func(c *FlowConfig) { c.Server.RevocationEndpoint = "http://as.example/revoke" }, wantIs: ErrInsecureURL},
		{name: "no resource to send", change: func(c *FlowConfig) { c.Server.Resource = "" }, wantSub: "resource"},
		{name: "no client_id", change: func(c *FlowConfig) { c.Client.ID = "" }, wantSub: "client_id"},
		{name: "basic without a secret", change: func(c *FlowConfig) { c.Client.AuthMethod = AuthSecretBasic }, wantSub: "without a client secret"},
		{name: "none with a secret", change: func(c *FlowConfig) { c.Client.AuthMethod, c.Client.Secret = AuthNone, "x" }, wantSub: "secret with auth method none"},
		{name: "unsupported method", change: func(c *FlowConfig) { c.Client.AuthMethod = "private_key_jwt" }, wantSub: "private_key_jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.change(&c)
			_, err := NewFlow(c)
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("NewFlow: %v; want %v %q", err, tt.wantIs, tt.wantSub)
			}
		})
	}
	// Resource omitted: no resource needed.
	c := good()
	c.Server.Resource, c.OmitResource = "", true
	if _, err := NewFlow(c); err != nil {
		t.Errorf("NewFlow without a resource, omitted: %v", err)
	}
}

func TestAuthMethod(t *testing.T) {
	tests := []struct {
		name      string
		client    Client
		supported []string
		want      string
	}{
		{name: "no secret", client: Client{ID: "a"}, want: AuthNone},
		{name: "secret, nothing advertised", client: Client{ID: "a", Secret: "s"}, want: AuthSecretBasic},
		{name: "secret, basic advertised", client: Client{ID: "a", Secret: "s"}, supported: []string{AuthSecretPost, AuthSecretBasic}, want: AuthSecretBasic},
		{name: "secret, only post advertised", client: Client{ID: "a", Secret: "s"}, supported: []string{"none", AuthSecretPost}, want: AuthSecretPost},
		{name: "secret, neither advertised", client: Client{ID: "a", Secret: "s"}, supported: []string{"private_key_jwt"}, want: AuthSecretBasic},
		{name: "explicit", client: Client{ID: "a", Secret: "s", AuthMethod: AuthSecretPost}, supported: []string{AuthSecretBasic}, want: AuthSecretPost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := authMethod(tt.client, tt.supported)
			if err != nil || got != tt.want {
				t.Errorf("authMethod = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPendingHidesVerifier(t *testing.T) {
	p := Pending{State: "st", Verifier: "verifier-value", Issuer: "https://as.example", CreatedAt: time.Unix(0, 0)}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("pending", "pending", p)
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), logged.String()} {
		if strings.Contains(s, "verifier-value") {
			t.Errorf("shows the verifier: %s", s)
		}
	}
}

package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestChooseIdentity(t *testing.T) {
	const cimd = "https://gw.example/oauth/client.json"
	pre := &Client{ID: "pre", Secret: "s3cret", AuthMethod: AuthSecretBasic}
	full := &Server{Issuer: "https://as.example", CIMDSupported: true, RegistrationEndpoint: "https://as.example/register"}
	tests := []struct {
		name    string
		srv     *Server
		pre     *Client
		cimdURL string
		want    Client
		how     Identity
		wantErr error
	}{
		{name: "pre-registered first", srv: full, pre: pre, cimdURL: cimd, want: *pre, how: IdentityPreRegistered},
		{name: "an empty pre-registered client is none", srv: full, pre: &Client{}, cimdURL: cimd,
			want: Client{ID: cimd, AuthMethod: AuthNone}, how: IdentityMetadataDocument},
		{name: "metadata document before registration", srv: full, cimdURL: cimd,
			want: Client{ID: cimd, AuthMethod: AuthNone}, how: IdentityMetadataDocument},
		{name: "registration without a document URL", srv: full, how: IdentityDynamicRegistration},
		{name: "registration when documents are not supported", cimdURL: cimd,
			srv: &Server{Issuer: "https://as.example", RegistrationEndpoint: "https://as.example/register"}, how: IdentityDynamicRegistration},
		{name: "nothing possible", srv: &Server{Issuer: "https://as.example"}, cimdURL: cimd, wantErr: ErrNoIdentity},
		{name: "document URL over http", srv: full, cimdURL: "http://127.0.0.1/client.json", wantErr: ErrInsecureURL},
		{name: "document URL without a path", srv: full, cimdURL: "https://gw.example/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, err := ChooseIdentity(tt.srv, tt.pre, tt.cimdURL)
			wantErr := tt.wantErr != nil || tt.how == ""
			if (err != nil) != wantErr || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("ChooseIdentity: %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want || how != tt.how {
				t.Errorf("ChooseIdentity = %v, %q; want %v, %q", got, how, tt.want, tt.how)
			}
		})
	}
}

func TestMetadataDocument(t *testing.T) {
	const id = "https://gw.example/oauth/client.json"
	doc := MetadataDocument(id, "Switchboard", []string{"https://gw.example/connect/callback"})
	var got map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	want := map[string]any{
		"client_id":                  id,
		"client_name":                "Switchboard",
		"application_type":           "web",
		"redirect_uris":              []any{"https://gw.example/connect/callback"},
		"grant_types":                []any{"authorization_code", "refresh_token"},
		"response_types":             []any{"code"},
		"token_endpoint_auth_method": "none",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("document\n got %v\nwant %v", got, want)
	}
	// The document keeps redirect_uris a list even when empty: the field is
	// required.
	if doc := MetadataDocument(id, "x", nil); !strings.Contains(string(doc), `"redirect_uris": []`) {
		t.Errorf("empty redirect_uris: %s", doc)
	}
}

// TestMetadataDocumentUsed serves the document the way the gateway would and
// runs a flow with its URL as client_id against a server that fetches and
// checks it.
func TestMetadataDocumentUsed(t *testing.T) {
	mux := http.NewServeMux()
	docs := httptest.NewTLSServer(mux)
	defer docs.Close()
	cimdURL := docs.URL + "/oauth/client.json"
	mux.HandleFunc("GET /oauth/client.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(MetadataDocument(cimdURL, "Switchboard", []string{redirectURL}))
	})

	as := newFakeAS(t)
	as.meta = map[string]any{"client_id_metadata_document_supported": true}
	as.cimdClient = docs.Client()
	srv, err := Discover(context.Background(), nil, as.mcpURL(), Challenge{})
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	client, how, err := ChooseIdentity(srv, nil, cimdURL)
	if err != nil || how != IdentityMetadataDocument {
		t.Fatalf("ChooseIdentity = %v, %q, %v", client, how, err)
	}
	f := testFlow(t, as, FlowConfig{Server: srv, Client: client})
	tok := connect(t, as, f)
	if tok.AccessToken == "" {
		t.Fatal("no token")
	}
	as.mu.Lock()
	fetched := as.cimdFetched
	as.mu.Unlock()
	if len(fetched) == 0 || fetched[0] != cimdURL {
		t.Errorf("the server fetched %q", fetched)
	}
	_, _, forms, _, _ := as.snapshot()
	if got := forms[0].Get("client_id"); got != cimdURL {
		t.Errorf("token request client_id %q", got)
	}
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name       string
		reg        Registration
		regSecret  bool
		regExpires int64
		wantBody   map[string]any
		want       Client
		wantCode   string // an *OAuthError's
	}{
		{
			name: "public client",
			reg:  Registration{Name: "Switchboard", RedirectURIs: []string{"https://gw.example/cb"}, Scopes: []string{"repo", "read:user"}},
			wantBody: map[string]any{
				"client_name": "Switchboard", "application_type": "web", "redirect_uris": []any{"https://gw.example/cb"},
				"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
				"token_endpoint_auth_method": "none", "scope": "repo read:user",
			},
			want: Client{ID: "dyn-1", AuthMethod: AuthNone},
		},
		{
			name: "a gateway on a person's machine registers as a native client",
			reg:  Registration{Name: "Switchboard", RedirectURIs: []string{"http://127.0.0.1:8080/connect/callback"}},
			wantBody: map[string]any{
				"client_name": "Switchboard", "application_type": "native", "redirect_uris": []any{"http://127.0.0.1:8080/connect/callback"},
				"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
				"token_endpoint_auth_method": "none",
			},
			want: Client{ID: "dyn-1", AuthMethod: AuthNone},
		},
		{
			name:       "confidential client with an expiring secret",
			reg:        Registration{Name: "Switchboard", RedirectURIs: []string{"https://gw.example/cb"}, AuthMethod: AuthSecretBasic},
			regSecret:  true,
			regExpires: 1900000000,
			wantBody: map[string]any{
				"client_name": "Switchboard", "application_type": "web", "redirect_uris": []any{"https://gw.example/cb"},
				"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
				"token_endpoint_auth_method": "client_secret_basic",
			},
			want: Client{ID: "dyn-1", Secret: "dyn-secret-secretish", AuthMethod: AuthSecretBasic, SecretExpiresAt: time.Unix(1900000000, 0).UTC()},
		},
		{
			name: "refused",
			reg:  Registration{Name: "Switchboard"},
			wantBody: map[string]any{
				"client_name": "Switchboard", "application_type": "web", "redirect_uris": []any{},
				"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
				"token_endpoint_auth_method": "none",
			},
			wantCode: "invalid_redirect_uri",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.regSecret, as.regExpires = tt.regSecret, tt.regExpires
			srv := &Server{Issuer: as.issuer(), RegistrationEndpoint: as.srv.URL + "/register"}
			got, err := Register(context.Background(), as.srv.Client(), srv, tt.reg)
			if tt.wantCode != "" {
				var oe *OAuthError
				if !errors.As(err, &oe) || oe.Code != tt.wantCode || oe.Endpoint != EndpointRegistration || oe.StatusCode != 400 {
					t.Fatalf("Register: %v; want an OAuthError %s", err, tt.wantCode)
				}
			} else if err != nil {
				t.Fatalf("Register: %v", err)
			}
			if got != tt.want {
				t.Errorf("Register = %#v, want %+v", got, tt.want)
			}
			_, _, _, _, registered := as.snapshot()
			if len(registered) != 1 || !reflect.DeepEqual(registered[0], tt.wantBody) {
				t.Errorf("registration request\n got %v\nwant %v", registered, tt.wantBody)
			}
		})
	}
}

func TestRegisterRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name    string
		srv     *Server
		reg     Registration
		wantIs  error
		wantSub string
	}{
		{name: "no endpoint", srv: &Server{Issuer: "https://as.example"}, wantIs: ErrNoRegistration},
		{name: "plain http endpoint", srv: &Server{RegistrationEndpoint: "http://as.example/register"}, wantIs: ErrInsecureURL},
		{name: "unsupported method", srv: &Server{RegistrationEndpoint: "https://as.example/register"},
			reg: Registration{AuthMethod: "private_key_jwt"}, wantSub: "private_key_jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Register(context.Background(), nil, tt.srv, tt.reg)
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("Register: %v; want %v %q", err, tt.wantIs, tt.wantSub)
			}
		})
	}
}

func TestSelectScopes(t *testing.T) {
	srv := &Server{ScopesSupported: []string{"repo", "read:user"}}
	tests := []struct {
		name       string
		configured []string
		challenged []string
		srv        *Server
		want       []string
	}{
		{name: "configured", configured: []string{"repo"}, srv: srv, want: []string{"repo"}},
		{name: "configured and challenged, once each", configured: []string{"repo", ""}, challenged: []string{"admin", "repo"}, srv: srv, want: []string{"repo", "admin"}},
		{name: "challenged", challenged: []string{"admin"}, srv: srv, want: []string{"admin"}},
		{name: "scopes_supported", srv: srv, want: []string{"repo", "read:user"}},
		{name: "nothing", srv: &Server{}, want: nil},
		{name: "no server", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SelectScopes(tt.configured, Challenge{Scopes: tt.challenged}, tt.srv)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SelectScopes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClientHidesSecret(t *testing.T) {
	c := Client{ID: "id", Secret: "s3cret-value", AuthMethod: AuthSecretBasic}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("client", "client", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), logged.String()} {
		if strings.Contains(s, "s3cret-value") {
			t.Errorf("shows the secret: %s", s)
		}
	}
}

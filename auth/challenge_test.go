package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestChallengeGolden(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.Scopes = []string{"mcp", "files:read"}
	rs := ti.server(t, cfg)
	const prm = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	secretTok := ti.rs256(ti.claims())
	tests := []struct {
		name   string
		err    error
		status int
		header string
		body   string
	}{
		{
			name:   "no token",
			err:    ErrNoToken,
			status: 401,
			header: `Bearer resource_metadata="` + prm + `", scope="mcp files:read"`,
			body:   `{"error":{"code":-32004,"message":"Unauthorized: a bearer token is required"},"id":null,"jsonrpc":"2.0"}`,
		},
		{
			name:   "invalid token",
			err:    invalid("oidc: expected audience %q got %q (token %s)", testAudience, "x", secretTok),
			status: 401,
			header: `Bearer error="invalid_token", resource_metadata="` + prm + `", scope="mcp files:read", error_description="The access token is invalid or expired."`,
			body:   `{"error":{"code":-32004,"message":"Unauthorized: invalid token"},"id":null,"jsonrpc":"2.0"}`,
		},
		{
			name:   "unknown error is an invalid token",
			err:    errors.New("something"),
			status: 401,
			header: `Bearer error="invalid_token", resource_metadata="` + prm + `", scope="mcp files:read", error_description="The access token is invalid or expired."`,
			body:   `{"error":{"code":-32004,"message":"Unauthorized: invalid token"},"id":null,"jsonrpc":"2.0"}`,
		},
		{
			name:   "insufficient scope",
			err:    fmt.Errorf("wrapped: %w", &InsufficientScopeError{Scopes: []string{"mcp", "files:write"}, Missing: []string{"files:write"}}),
			status: 403,
			header: `Bearer error="insufficient_scope", resource_metadata="` + prm + `", scope="mcp files:write", error_description="The access token lacks a required scope."`,
			body:   `{"error":{"code":-32003,"message":"Forbidden: insufficient scope"},"id":null,"jsonrpc":"2.0"}`,
		},
		{
			name:   "unavailable",
			err:    &UnavailableError{Err: errors.New("dial tcp: refused")},
			status: 503,
			header: ``,
			body:   `{"error":{"code":-32000,"message":"The authorization server is unavailable; retry later"},"id":null,"jsonrpc":"2.0"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			rs.Challenge(w, tt.err)
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.header {
				t.Errorf("WWW-Authenticate:\n got %s\nwant %s", got, tt.header)
			}
			if got := strings.TrimSpace(w.Body.String()); got != tt.body {
				t.Errorf("body:\n got %s\nwant %s", got, tt.body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if strings.Contains(w.Body.String()+fmt.Sprint(w.Header()), secretTok) || strings.Contains(w.Body.String(), "audience") {
				t.Error("challenge leaks token or reason")
			}
		})
	}
	// No scopes configured: no scope parameter.
	cfg.Scopes = nil
	rs = ti.server(t, cfg)
	if got, want := rs.ChallengeHeader("", nil, ""), `Bearer resource_metadata="`+prm+`"`; got != want {
		t.Errorf("no scopes: %s", got)
	}
}

func TestChallengeEndToEnd(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	c := ti.claims()
	c["scope"] = "other"
	_, err := rs.Authenticate(request(ti.rs256(c)))
	w := httptest.NewRecorder()
	rs.Challenge(w, err)
	if w.Code != 403 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`) ||
		!strings.Contains(w.Header().Get("WWW-Authenticate"), `scope="mcp"`) {
		t.Errorf("missing scope: %d %s", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}

func TestMetadataHandler(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.ResourceName = "Switchboard"
	cfg.DocumentationURL = "https://docs.example.com/mcp"
	rs := ti.server(t, cfg)
	h := rs.MetadataHandler()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 testAudience,
		"authorization_servers":    []any{ti.srv.URL},
		"scopes_supported":         []any{"mcp"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "Switchboard",
		"resource_documentation":   "https://docs.example.com/mcp",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metadata:\n got %v\nwant %v", got, want)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/.well-known/oauth-protected-resource", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}

// TestMetadataPath: the document is served at the path of the URL the challenge announces, which RFC 9728 §3.1
// builds from the resource identifier (so §3.3's check of resource against that URL holds); an announced URL that
// is no well-known path of this gateway leaves it the audience's own path.
func TestMetadataPath(t *testing.T) {
	ti := newTestIssuer(t)
	for _, tc := range []struct{ audience, announced, path string }{
		{"https://mcp.example.com/mcp", "", "/.well-known/oauth-protected-resource/mcp"},
		{"https://mcp.example.com", "", "/.well-known/oauth-protected-resource"},
		{"https://mcp.example.com/", "", "/.well-known/oauth-protected-resource"},
		{"https://mcp.example.com/tenant/a/mcp", "", "/.well-known/oauth-protected-resource/tenant/a/mcp"},
		{"https://mcp.example.com/tenant/a/mcp", "https://docs.example.com/mcp-metadata.json", "/.well-known/oauth-protected-resource/tenant/a/mcp"},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource/mcp"},
	} {
		cfg := ti.config()
		cfg.Audience, cfg.ResourceMetadataURL = tc.audience, tc.announced
		rs := ti.server(t, cfg)
		if got := rs.MetadataPath(); got != tc.path {
			t.Errorf("audience %s, announced %q: MetadataPath = %q, want %q", tc.audience, tc.announced, got, tc.path)
		}
		if tc.announced != "" {
			continue
		}
		w := httptest.NewRecorder()
		rs.Challenge(w, ErrNoToken)
		if want := `resource_metadata="` + MetadataURL(tc.audience) + `"`; !strings.Contains(w.Header().Get("WWW-Authenticate"), want) ||
			!strings.HasSuffix(MetadataURL(tc.audience), tc.path) {
			t.Errorf("audience %s: challenge %q does not point at the served path %s", tc.audience, w.Header().Get("WWW-Authenticate"), tc.path)
		}
	}
}

func TestPrincipalNeverShowsToken(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	tok := ti.rs256(ti.claims())
	p, err := rs.Authenticate(request(tok))
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "p", p, "pv", *p)
	js, _ := json.Marshal(p)
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprintf("%v", *p),
		fmt.Sprintf("%+v", *p), fmt.Sprintf("%#v", *p), logged.String(), string(js)} {
		if strings.Contains(s, tok) || strings.Contains(s, tok[len(tok)-20:]) {
			t.Errorf("token shown in %q", s)
		}
	}
	if !strings.Contains(logged.String(), `"sub":"alice"`) {
		t.Errorf("log = %s", logged.String())
	}
}

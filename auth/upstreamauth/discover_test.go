package upstreamauth

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestDiscoverOrder(t *testing.T) {
	const (
		prmSuffixed = wellKnownResource + "/mcp"
		prmRoot     = wellKnownResource
		oauthRoot   = "/.well-known/oauth-authorization-server"
		oidcRoot    = "/.well-known/openid-configuration"
	)
	tests := []struct {
		name       string
		announce   bool // the challenge names the metadata (at prmPath)
		prmPath    string
		issuerPath string
		metaPath   string
		wantHits   []string
	}{
		{
			name: "named by the challenge; RFC 8414 at the root", announce: true,
			prmPath: "/meta/elsewhere", metaPath: oauthRoot,
			wantHits: []string{"/meta/elsewhere", oauthRoot},
		},
		{
			name:    "not named: path-suffixed well-known",
			prmPath: prmSuffixed, metaPath: oauthRoot,
			wantHits: []string{prmSuffixed, oauthRoot},
		},
		{
			name:    "not named: root well-known after the path-suffixed one",
			prmPath: prmRoot, metaPath: oauthRoot,
			wantHits: []string{prmSuffixed, prmRoot, oauthRoot},
		},
		{
			name:    "issuer without a path: OpenID Connect after RFC 8414",
			prmPath: prmSuffixed, metaPath: oidcRoot,
			wantHits: []string{prmSuffixed, oauthRoot, oidcRoot},
		},
		{
			name:    "issuer with a path: RFC 8414 with path insertion",
			prmPath: prmSuffixed, issuerPath: "/tenant1", metaPath: oauthRoot + "/tenant1",
			wantHits: []string{prmSuffixed, oauthRoot + "/tenant1"},
		},
		{
			name:    "issuer with a path: OpenID Connect with path insertion",
			prmPath: prmSuffixed, issuerPath: "/tenant1", metaPath: oidcRoot + "/tenant1",
			wantHits: []string{prmSuffixed, oauthRoot + "/tenant1", oidcRoot + "/tenant1"},
		},
		{
			name:    "issuer with a path: OpenID Connect with the path appended",
			prmPath: prmSuffixed, issuerPath: "/tenant1", metaPath: "/tenant1" + oidcRoot,
			wantHits: []string{prmSuffixed, oauthRoot + "/tenant1", oidcRoot + "/tenant1", "/tenant1" + oidcRoot},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.prmPaths = []string{tt.prmPath}
			as.issuerPath = tt.issuerPath
			as.metaPaths = []string{tt.metaPath}
			as.meta = map[string]any{"authorization_response_iss_parameter_supported": true, "client_id_metadata_document_supported": true}
			var ch Challenge
			if tt.announce {
				ch.ResourceMetadata = as.srv.URL + tt.prmPath
			}
			srv, err := Discover(context.Background(), as.srv.Client(), as.mcpURL(), ch)
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			hits, _, _, _, _ := as.snapshot()
			if !reflect.DeepEqual(hits, tt.wantHits) {
				t.Errorf("requests\n got %q\nwant %q", hits, tt.wantHits)
			}
			want := &Server{
				Resource:                 as.mcpURL(),
				ScopesSupported:          []string{"repo", "read:user"},
				Issuer:                   as.issuer(),
				AuthorizationEndpoint:    as.srv.URL + "/authorize",
				TokenEndpoint:            as.srv.URL + "/token",
				RegistrationEndpoint:     as.srv.URL + "/register",
				RevocationEndpoint:       as.srv.URL + "/revoke",
				CodeChallengeMethods:     []string{"S256"},
				TokenEndpointAuthMethods: []string{"none", "client_secret_basic"},
				IssParameterSupported:    true,
				CIMDSupported:            true,
			}
			if !reflect.DeepEqual(srv, want) {
				t.Errorf("server\n got %+v\nwant %+v", srv, want)
			}
		})
	}
}

func TestDiscoverAcceptsParentResourceAndSecondServer(t *testing.T) {
	as := newFakeAS(t)
	// The resource names the origin (a parent of /mcp), and the first
	// authorization server listed has no metadata.
	as.prm = map[string]any{
		"resource":              as.srv.URL,
		"authorization_servers": []string{as.srv.URL + "/gone", as.issuer()},
	}
	srv, err := Discover(context.Background(), nil, as.mcpURL(), Challenge{})
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if srv.Resource != as.srv.URL || srv.Issuer != as.issuer() {
		t.Errorf("got resource %q issuer %q", srv.Resource, srv.Issuer)
	}
}

func TestDiscoverRefuses(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(as *fakeAS, ch *Challenge)
		wantIs  error
		wantSub string // a URL or value the error must name
	}{
		{
			name:    "resource of another path",
			setup:   func(as *fakeAS, _ *Challenge) { as.prm = map[string]any{"resource": as.srv.URL + "/other"} },
			wantIs:  ErrResourceMismatch,
			wantSub: wellKnownResource + "/mcp",
		},
		{
			name:    "resource of another origin",
			setup:   func(as *fakeAS, _ *Challenge) { as.prm = map[string]any{"resource": "https://victim.example/mcp"} },
			wantIs:  ErrResourceMismatch,
			wantSub: "https://victim.example/mcp",
		},
		{
			name:    "resource sharing a prefix but not a segment",
			setup:   func(as *fakeAS, _ *Challenge) { as.prm = map[string]any{"resource": as.srv.URL + "/mc"} },
			wantIs:  ErrResourceMismatch,
			wantSub: "/mc",
		},
		{
			name:   "resource missing",
			setup:  func(as *fakeAS, _ *Challenge) { as.prm = map[string]any{"resource": ""} },
			wantIs: ErrResourceMismatch,
		},
		{
			name: "named by the challenge, resource of another path",
			setup: func(as *fakeAS, ch *Challenge) {
				ch.ResourceMetadata = as.srv.URL + wellKnownResource + "/mcp"
				as.prm = map[string]any{"resource": as.srv.URL + "/other"}
			},
			wantIs: ErrResourceMismatch,
		},
		{
			name: "S256 missing",
			setup: func(as *fakeAS, _ *Challenge) {
				as.meta = map[string]any{"code_challenge_methods_supported": []string{"plain"}}
			},
			wantIs:  ErrNoPKCE,
			wantSub: "/.well-known/oauth-authorization-server",
		},
		{
			name:   "code_challenge_methods_supported absent",
			setup:  func(as *fakeAS, _ *Challenge) { as.meta = map[string]any{"code_challenge_methods_supported": nil} },
			wantIs: ErrNoPKCE,
		},
		{
			name:    "metadata of another issuer",
			setup:   func(as *fakeAS, _ *Challenge) { as.meta = map[string]any{"issuer": "https://evil.example"} },
			wantIs:  ErrIssuerMismatch,
			wantSub: "https://evil.example",
		},
		{
			name:   "no authorization_servers",
			setup:  func(as *fakeAS, _ *Challenge) { as.prm = map[string]any{"authorization_servers": []string{}} },
			wantIs: ErrNoAuthorizationServer,
		},
		{
			name:   "no token endpoint",
			setup:  func(as *fakeAS, _ *Challenge) { as.meta = map[string]any{"token_endpoint": nil} },
			wantIs: ErrNoAuthorizationServer,
		},
		{
			name:    "no protected-resource metadata anywhere",
			setup:   func(as *fakeAS, _ *Challenge) { as.prmPaths = nil },
			wantIs:  ErrNoResourceMetadata,
			wantSub: wellKnownResource + "/mcp",
		},
		{
			name: "the named metadata missing: no probing elsewhere",
			setup: func(as *fakeAS, ch *Challenge) {
				ch.ResourceMetadata = as.srv.URL + "/nothing-here"
				as.prmPaths = []string{wellKnownResource, wellKnownResource + "/mcp"}
			},
			wantIs:  ErrNoResourceMetadata,
			wantSub: "/nothing-here",
		},
		{
			name:    "no authorization server metadata anywhere",
			setup:   func(as *fakeAS, _ *Challenge) { as.metaPaths = nil },
			wantIs:  ErrNoAuthorizationServer,
			wantSub: "/.well-known/openid-configuration",
		},
		{
			name: "plain http metadata URL",
			setup: func(_ *fakeAS, ch *Challenge) {
				ch.ResourceMetadata = "http://mcp.example.com/.well-known/oauth-protected-resource"
			},
			wantIs:  ErrInsecureURL,
			wantSub: "http://mcp.example.com",
		},
		{
			name: "plain http token endpoint",
			setup: func(as *fakeAS, _ *Challenge) {
				as.meta = map[string]any{"token_endpoint": "http://as.example.com/token"}
			},
			wantIs:  ErrInsecureURL,
			wantSub: "http://as.example.com/token",
		},
		{
			name: "plain http authorization server",
			setup: func(as *fakeAS, _ *Challenge) {
				as.prm = map[string]any{"authorization_servers": []string{"http://as.example.com"}}
			},
			wantIs:  ErrInsecureURL,
			wantSub: "http://as.example.com",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t)
			var ch Challenge
			tt.setup(as, &ch)
			srv, err := Discover(context.Background(), as.srv.Client(), as.mcpURL(), ch)
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("Discover = %+v, %v; want %v", srv, err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("error %q does not name %q", err, tt.wantSub)
			}
		})
	}
}

func TestDiscoverStopsOnServerError(t *testing.T) {
	as := newFakeAS(t)
	as.prmPaths = []string{wellKnownResource}
	as.statusAt = map[string]int{wellKnownResource + "/mcp": 500}
	_, err := Discover(context.Background(), as.srv.Client(), as.mcpURL(), Challenge{})
	if err == nil || errors.Is(err, ErrNoResourceMetadata) || !strings.Contains(err.Error(), wellKnownResource+"/mcp: HTTP 500") {
		t.Fatalf("Discover: %v; want the 500 of the path-suffixed URL", err)
	}
	if hits, _, _, _, _ := as.snapshot(); len(hits) != 1 {
		t.Errorf("requests %q: went on after a 500", hits)
	}
}

func TestDiscoverBoundsDocuments(t *testing.T) {
	as := newFakeAS(t)
	as.prm = map[string]any{"padding": strings.Repeat("x", maxMetadata)}
	_, err := Discover(context.Background(), as.srv.Client(), as.mcpURL(), Challenge{})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Discover: %v; want a size error", err)
	}
}

func TestDiscoverHonoursContext(t *testing.T) {
	as := newFakeAS(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Discover(ctx, as.srv.Client(), as.mcpURL(), Challenge{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Discover: %v; want context.Canceled", err)
	}
}

func TestResourceCovers(t *testing.T) {
	tests := []struct {
		resource, mcp string
		want          bool
	}{
		{"https://m.example/mcp", "https://m.example/mcp", true},
		{"https://m.example/mcp/", "https://m.example/mcp", true},
		{"https://m.example/mcp", "https://m.example/mcp/", true},
		{"https://M.Example/mcp", "https://m.example/mcp", true},
		{"HTTPS://m.example/mcp", "https://m.example/mcp", true},
		{"https://m.example:443/mcp", "https://m.example/mcp", true},
		{"https://m.example", "https://m.example/mcp", true},
		{"https://m.example/", "https://m.example/a/b", true},
		{"https://m.example/a", "https://m.example/a/b", true},
		{"https://m.example/a/b", "https://m.example/a", false},
		{"https://m.example/mc", "https://m.example/mcp", false},
		{"https://m.example/other", "https://m.example/mcp", false},
		{"https://m.example:8443/mcp", "https://m.example/mcp", false},
		{"http://m.example/mcp", "https://m.example/mcp", false},
		{"https://evil.example/mcp", "https://m.example/mcp", false},
		{"https://m.example.evil/mcp", "https://m.example/mcp", false},
		{"https://m.example/mcp?t=1", "https://m.example/mcp?t=1", true},
		{"https://m.example/mcp?t=1", "https://m.example/mcp?t=2", false},
		{"https://m.example?t=1", "https://m.example/mcp?t=1", false},
		{"https://[::1]:8443/mcp", "https://[::1]:8443/mcp", true},
	}
	for _, tt := range tests {
		r, _ := url.Parse(tt.resource)
		m, _ := url.Parse(tt.mcp)
		if got := resourceCovers(r, m); got != tt.want {
			t.Errorf("resourceCovers(%s, %s) = %v, want %v", tt.resource, tt.mcp, got, tt.want)
		}
	}
}

func TestWellKnownURLs(t *testing.T) {
	tests := []struct {
		in        string
		resource  []string
		authority []string
	}{
		{
			in:        "https://a.example",
			resource:  []string{"https://a.example/.well-known/oauth-protected-resource"},
			authority: []string{"https://a.example/.well-known/oauth-authorization-server", "https://a.example/.well-known/openid-configuration"},
		},
		{
			in:        "https://a.example/",
			resource:  []string{"https://a.example/.well-known/oauth-protected-resource"},
			authority: []string{"https://a.example/.well-known/oauth-authorization-server", "https://a.example/.well-known/openid-configuration"},
		},
		{
			in:       "https://a.example/public/mcp",
			resource: []string{"https://a.example/.well-known/oauth-protected-resource/public/mcp", "https://a.example/.well-known/oauth-protected-resource"},
			authority: []string{
				"https://a.example/.well-known/oauth-authorization-server/public/mcp",
				"https://a.example/.well-known/openid-configuration/public/mcp",
				"https://a.example/public/mcp/.well-known/openid-configuration",
			},
		},
		{
			in:       "https://a.example/tenant1/",
			resource: []string{"https://a.example/.well-known/oauth-protected-resource/tenant1/", "https://a.example/.well-known/oauth-protected-resource"},
			authority: []string{
				"https://a.example/.well-known/oauth-authorization-server/tenant1",
				"https://a.example/.well-known/openid-configuration/tenant1",
				"https://a.example/tenant1/.well-known/openid-configuration",
			},
		},
		{
			in:        "https://a.example/mcp?x=1",
			resource:  []string{"https://a.example/.well-known/oauth-protected-resource/mcp?x=1", "https://a.example/.well-known/oauth-protected-resource"},
			authority: nil, // an issuer has no query
		},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.in)
		if got := resourceMetadataURLs(u); !reflect.DeepEqual(got, tt.resource) {
			t.Errorf("resourceMetadataURLs(%s)\n got %q\nwant %q", tt.in, got, tt.resource)
		}
		if tt.authority == nil {
			continue
		}
		if got := serverMetadataURLs(u); !reflect.DeepEqual(got, tt.authority) {
			t.Errorf("serverMetadataURLs(%s)\n got %q\nwant %q", tt.in, got, tt.authority)
		}
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		in     string
		ok     bool
		wantIs error
	}{
		{in: "https://as.example/token", ok: true},
		{in: "http://127.0.0.1:8080/cb", ok: true},
		{in: "http://[::1]:8080/cb", ok: true},
		{in: "http://localhost/cb", ok: true},
		{in: "http://as.example/token", wantIs: ErrInsecureURL},
		{in: "http://127.0.0.1.nip.io/token", wantIs: ErrInsecureURL},
		{in: "ftp://as.example/token", wantIs: ErrInsecureURL},
		{in: "/token"},
		{in: "https://as.example/token#frag"},
		{in: "https://as.example/token#"},
		{in: "https://user:pw@as.example/token"},
		{in: "https://as.example/\x7f"},
	}
	for _, tt := range tests {
		_, err := checkURL("endpoint", tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("checkURL(%q) = %v, want ok %v", tt.in, err, tt.ok)
		}
		if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
			t.Errorf("checkURL(%q) = %v, want %v", tt.in, err, tt.wantIs)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("checkURL(%q) = %v: shows the password", tt.in, err)
		}
	}
}

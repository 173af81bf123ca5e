package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestIDJAG: two people reach an ID-JAG upstream as themselves, without a browser step: each one's ID token is
// exchanged at the IdP (RFC 8693, for an ID-JAG with the AS as audience and the upstream as resource), and the
// ID-JAG presented at the AS (RFC 7523, client_secret_basic) for their own access token, cached per person. A
// refused exchange is ErrIDJAGRefused with the IdP's code, and no error carries an assertion or a token.
func TestIDJAG(t *testing.T) {
	const (
		asIssuer = "https://as.example"
		resource = "https://mcp.example/mcp"
	)
	var mu sync.Mutex
	var idpCalls, asCalls int
	var problems []string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		mu.Lock()
		idpCalls++
		mu.Unlock()
		if f.Get("grant_type") != grantTokenExchange || f.Get("subject_token_type") != tokenTypeIDToken ||
			f.Get("requested_token_type") != tokenTypeIDJAG || f.Get("audience") != asIssuer || f.Get("resource") != resource {
			mu.Lock()
			problems = append(problems, "idp form "+f.Encode())
			mu.Unlock()
		}
		who, _ := strings.CutPrefix(f.Get("subject_token"), "idtoken-")
		if who == "mallory" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"access_denied","error_description":"idtoken-mallory has no access"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":"jag-%s","issued_token_type":%q,"token_type":"N_A","expires_in":300}`, who, tokenTypeIDJAG)
	}))
	t.Cleanup(idp.Close)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		mu.Lock()
		asCalls++
		if !ok || id != "gw" || secret != "gw-secret" || r.PostForm.Get("grant_type") != grantJWTBearer {
			problems = append(problems, "as request "+r.PostForm.Encode())
		}
		mu.Unlock()
		who, _ := strings.CutPrefix(r.PostForm.Get("assertion"), "jag-")
		fmt.Fprintf(w, `{"access_token":"at-%s","token_type":"Bearer","expires_in":3600}`, who)
	}))
	t.Cleanup(as.Close)
	src := NewIDJAGSource(IDJAGConfig{
		IdPTokenURL: idp.URL, Audience: asIssuer, Resource: resource,
		TokenURL: as.URL, ClientID: "gw", ClientSecret: "gw-secret",
	}, nil)
	ctx := context.Background()
	person := func(name string) *Principal {
		return &Principal{Subject: name, Issuer: "https://idp.example", token: "idtoken-" + name, Expiry: time.Now().Add(time.Hour)}
	}
	for range 2 {
		for _, name := range []string{"alice", "bob"} {
			h, err := src.Header(ctx, person(name))
			if err != nil || h.Get("Authorization") != "Bearer at-"+name {
				t.Errorf("%s: %v, Authorization %q", name, err, h.Get("Authorization"))
			}
		}
	}
	if idpCalls != 2 || asCalls != 2 {
		t.Errorf("%d exchanges at the IdP, %d grants at the AS, want 2 and 2 (one per person, then cached)", idpCalls, asCalls)
	}
	_, err := src.Header(ctx, person("mallory"))
	if !errors.Is(err, ErrIDJAGRefused) || !strings.Contains(err.Error(), "access_denied") || strings.Contains(err.Error(), "idtoken") {
		t.Errorf("refused exchange: %v, want ErrIDJAGRefused with the code and no assertion", err)
	}
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.PublicReason(), "access_denied") || strings.Contains(re.PublicReason(), "idtoken") {
		t.Errorf("refused exchange: %v, want a RefusedError whose public reason has the code alone", err)
	}
	if _, err := src.Header(ctx, nil); !errors.Is(err, ErrNoSubjectToken) {
		t.Errorf("no caller: %v, want ErrNoSubjectToken", err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestIDJAGCredentialSource: through NewCredentialSource, a request with no caller is the one person of
// SubjectTokenFile when it is set, and the gateway itself (client credentials with the same client at the
// authorization server) when it is not; a caller's own token is exchanged either way.
func TestIDJAGCredentialSource(t *testing.T) {
	idp := fakeIdP(t, nil)
	as := fakeJAGServer(t, func(who string) string { return "at-" + who })
	file := filepath.Join(t.TempDir(), "id_token")
	if err := os.WriteFile(file, []byte("idtoken-dana\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		file, want string
	}{{file, "Bearer at-dana"}, {"", "Bearer at-gateway"}} {
		src, err := NewCredentialSource(ctx, CredentialOptions{Upstream: "crm", IDJAG: &IDJAGConfig{
			IdPTokenURL: idp.URL, Audience: "https://as.example", Resource: "https://mcp.example/mcp",
			TokenURL: as.URL, ClientID: "gw", ClientSecret: "gw-secret", SubjectTokenFile: c.file,
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := src.Header(ctx, nil); err != nil || h.Get("Authorization") != c.want {
			t.Errorf("file %q, no caller: %v, Authorization %q, want %q", c.file, err, h.Get("Authorization"), c.want)
		}
		p := &Principal{Subject: "erin", token: "idtoken-erin", Expiry: time.Now().Add(time.Hour)}
		if h, err := src.Header(ctx, p); err != nil || h.Get("Authorization") != "Bearer at-erin" {
			t.Errorf("file %q, erin: %v, Authorization %q", c.file, err, h.Get("Authorization"))
		}
	}
	if _, err := NewCredentialSource(ctx, CredentialOptions{Upstream: "crm", IDJAG: &IDJAGConfig{
		IdPTokenURL: idp.URL, TokenURL: as.URL, SubjectTokenFile: filepath.Join(t.TempDir(), "missing"),
	}}, nil); err == nil {
		t.Error("a missing ID token file was accepted")
	}
}

// fakeIdP is an IdP's token endpoint exchanging the ID token "idtoken-<who>" for the ID-JAG "jag-<who>". grant,
// when set, sees each subject token's rest and names the person (ok false: the IdP refuses, access_denied).
func fakeIdP(t *testing.T, grant func(rest string) (who string, ok bool)) *httptest.Server {
	t.Helper()
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		who, _ := strings.CutPrefix(r.PostForm.Get("subject_token"), "idtoken-")
		if grant != nil {
			var ok bool
			if who, ok = grant(who); !ok {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"access_denied"}`)
				return
			}
		}
		fmt.Fprintf(w, `{"access_token":"jag-%s","issued_token_type":%q}`, who, tokenTypeIDJAG)
	}))
	t.Cleanup(idp.Close)
	return idp
}

// fakeJAGServer is an upstream authorization server's token endpoint: the client-credentials grant gets
// "at-gateway", the ID-JAG "jag-<who>" the access token token(who).
func fakeJAGServer(t *testing.T, token func(who string) string) *httptest.Server {
	t.Helper()
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") == "client_credentials" {
			fmt.Fprint(w, `{"access_token":"at-gateway","token_type":"Bearer","expires_in":3600}`)
			return
		}
		who, _ := strings.CutPrefix(r.PostForm.Get("assertion"), "jag-")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, token(who))
	}))
	t.Cleanup(as.Close)
	return as
}

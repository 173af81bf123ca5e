package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	if _, err := src.Header(ctx, nil); !errors.Is(err, ErrNoSubjectToken) {
		t.Errorf("no caller: %v, want ErrNoSubjectToken", err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

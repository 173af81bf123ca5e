package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWorkloadIdentity: the workload's token from its file is the assertion of a JWT bearer grant (RFC 7523), with
// the client named in the form and no secret, the resource and the scopes; the token is reused; a changed file is
// presented next time; a refusal is ErrWorkloadRefused with the server's code, never the assertion it echoed.
func TestWorkloadIdentity(t *testing.T) {
	var mu sync.Mutex
	var forms []url.Values
	var basic []bool
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		_, _, hasBasic := r.BasicAuth()
		mu.Lock()
		forms = append(forms, r.PostForm)
		basic = append(basic, hasBasic)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		a := r.PostForm.Get("assertion")
		if a == "sa-token-expired" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"expired: %s"}`, a)
			return
		}
		fmt.Fprintf(w, `{"access_token":"at-for-%s","token_type":"Bearer","expires_in":3600}`, a)
	}))
	t.Cleanup(as.Close)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("sa-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := WorkloadIdentityConfig{TokenFile: file, TokenURL: as.URL, ClientID: "wl", Scopes: []string{"crm.read"}, Resource: "https://mcp.example/mcp"}
	ctx := context.Background()
	src, err := NewWorkloadIdentitySource(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h, err := src.Header(ctx, nil)
		if err != nil || h.Get("Authorization") != "Bearer at-for-sa-token-1" {
			t.Fatalf("Header: %v, Authorization %q", err, h.Get("Authorization"))
		}
	}
	if len(forms) != 1 {
		t.Fatalf("%d token requests, want 1 (the token is reused)", len(forms))
	}
	f := forms[0]
	if f.Get("grant_type") != grantJWTBearer || f.Get("assertion") != "sa-token-1" || f.Get("client_id") != "wl" ||
		f.Has("client_secret") || basic[0] || f.Get("resource") != cfg.Resource || f.Get("scope") != "crm.read" {
		t.Errorf("token request %v (basic auth: %v)", f, basic[0])
	}

	// The file rotates: the next grant presents the new token (fileValue rereads it once its check is due).
	src2 := &jwtBearerSource{ctx: ctx, cfg: cfg, assertion: &fileValue{header: "the workload token file", path: file}}
	if err := src2.assertion.load(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("sa-token-expired"), 0o600); err != nil {
		t.Fatal(err)
	}
	src2.assertion.checked = time.Time{}
	_, err = src2.Token()
	if !errors.Is(err, ErrWorkloadRefused) || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), "sa-token") {
		t.Errorf("refused grant: %v; want ErrWorkloadRefused with invalid_grant and no assertion", err)
	}

	if _, err := NewWorkloadIdentitySource(ctx, WorkloadIdentityConfig{TokenFile: filepath.Join(t.TempDir(), "none"), TokenURL: as.URL}, nil); err == nil {
		t.Error("a missing token file was accepted")
	}
}

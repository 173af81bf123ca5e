package auth

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// TestIDJAGRetryOn401: an upstream that refuses a person's token before it expires (revoked) gets the request
// again, once, with a token a new exchange gave, the same body and all; the refused token is gone from the shared
// store, so the other replica, which still holds it in memory, is refused once and then takes the new one from the
// store without exchanging. The gateway's own token, a request without a person, and an upstream that refuses
// every token get no more than one retry, or none.
func TestIDJAGRetryOn401(t *testing.T) {
	var mu sync.Mutex
	exchanges := map[string]int{}
	revoked := map[string]bool{}
	var seen []string // what the upstream was sent: "<Authorization> <body>"
	idp := fakeIdP(t, nil)
	as := fakeJAGServer(t, func(who string) string {
		mu.Lock()
		defer mu.Unlock()
		exchanges[who]++
		return fmt.Sprintf("at-%s-%d", who, exchanges[who])
	})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tok := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, tok+" "+string(body))
		refused := revoked[tok] || revoked["*"]
		mu.Unlock()
		if refused {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, tok)
	}))
	t.Cleanup(up.Close)

	sealer, err := vault.NewKeyring("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, vault.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	store := &memTokenStore{}
	type replica struct {
		src    CredentialSource
		client *http.Client
	}
	newReplica := func() replica {
		src, err := NewCredentialSource(context.Background(), CredentialOptions{Upstream: "crm",
			Headers: map[string]string{"X-Team": "blue"}, // a multiSource, as with headers beside id-jag
			IDJAG: &IDJAGConfig{IdPTokenURL: idp.URL, Audience: "https://as.example", Resource: up.URL, TokenURL: as.URL,
				ClientID: "gw", ClientSecret: "gw-secret"},
			Shared: &SharedTokens{Store: store, Sealer: sealer}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return replica{src, &http.Client{Transport: &RetryOn401{Base: http.DefaultTransport, Source: src, Principal: PrincipalFrom}}}
	}
	a, b := newReplica(), newReplica()
	alice := &Principal{Subject: "alice", Issuer: "https://idp.example", token: "idtoken-alice", Expiry: time.Now().Add(2 * time.Hour)}
	// send is one request as the upstream transport makes it: the source's headers, then the client.
	send := func(r replica, p *Principal, body string) (int, string) {
		t.Helper()
		ctx := WithPrincipal(context.Background(), p)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		h, err := r.src.Header(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(got))
	}
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
	revoke := func(tok string) {
		mu.Lock()
		defer mu.Unlock()
		revoked[tok] = true
	}
	steps := []struct {
		what      string
		r         replica
		p         *Principal
		before    func()
		status    int
		sent      []string
		exchanges int // alice's, after the step
	}{
		{"alice on a", a, alice, nil, 200, []string{"Bearer at-alice-1 one"}, 1},
		{"alice on b, from the store", b, alice, nil, 200, []string{"Bearer at-alice-1 two"}, 1},
		{"alice on a, her token revoked", a, alice, func() { revoke("Bearer at-alice-1") }, 200,
			[]string{"Bearer at-alice-1 three", "Bearer at-alice-2 three"}, 2},
		{"alice on b, which remembers the revoked one", b, alice, nil, 200,
			[]string{"Bearer at-alice-1 four", "Bearer at-alice-2 four"}, 2},
		{"alice on b again", b, alice, nil, 200, []string{"Bearer at-alice-2 five"}, 2},
		{"the gateway itself, refused", a, nil, func() { revoke("Bearer at-gateway") }, 401, []string{"Bearer at-gateway six"}, 2},
		{"alice, every token refused", a, alice, func() { revoke("*") }, 401,
			[]string{"Bearer at-alice-2 seven", "Bearer at-alice-3 seven"}, 3},
	}
	bodies := []string{"one", "two", "three", "four", "five", "six", "seven"}
	for i, st := range steps {
		if st.before != nil {
			st.before()
		}
		status, _ := send(st.r, st.p, bodies[i])
		got := sent()
		if status != st.status || strings.Join(got, "|") != strings.Join(st.sent, "|") {
			t.Errorf("%s: %d, the upstream was sent %q; want %d, %q", st.what, status, got, st.status, st.sent)
		}
		mu.Lock()
		n := exchanges["alice"]
		mu.Unlock()
		if n != st.exchanges {
			t.Errorf("%s: %d exchanges for alice so far, want %d", st.what, n, st.exchanges)
		}
	}
}

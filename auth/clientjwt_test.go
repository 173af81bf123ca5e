package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
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

	jose "github.com/go-jose/go-jose/v4"
)

// TestPrivateKeyJWT: with a key file, the client credentials grant carries a client assertion (RFC 7523 §2.2)
// signed by that key, with iss and sub the client, aud the configured audience (else the token URL), a fresh jti
// and a short exp, and no secret; the key type chooses the algorithm.
func TestPrivateKeyJWT(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	for _, c := range []struct {
		name     string
		key      crypto.Signer
		pemBlock *pem.Block
		alg      jose.SignatureAlgorithm
		audience string
	}{
		{"EC, SEC 1, issuer as audience", ecKey, &pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}, jose.ES256, "https://as.example"},
		{"RSA, PKCS #1, token URL as audience", rsaKey, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}, jose.RS256, ""},
		{"Ed25519, PKCS #8", edKey, pkcs8(t, edKey), jose.EdDSA, "https://as.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var forms []url.Values
			as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				_, _, basic := r.BasicAuth()
				if basic {
					t.Error("the token request has HTTP Basic authentication")
				}
				mu.Lock()
				forms = append(forms, r.PostForm)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"access_token":"cc-token","token_type":"Bearer","expires_in":1}`) // 1s: every call fetches
			}))
			t.Cleanup(as.Close)
			keyFile := filepath.Join(t.TempDir(), "key.pem")
			if err := os.WriteFile(keyFile, pem.EncodeToMemory(c.pemBlock), 0o600); err != nil {
				t.Fatal(err)
			}
			src, err := NewCredentialSource(context.Background(), CredentialOptions{Upstream: "u", ClientCredentials: &ClientCredentialsConfig{
				TokenURL: as.URL + "/token", ClientID: "gw-client", KeyFile: keyFile, AssertionAudience: c.audience,
				Scopes: []string{"s1"}, Resource: "https://mcp.example/mcp",
			}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if h, err := src.Header(context.Background(), nil); err != nil || h.Get("Authorization") != "Bearer cc-token" {
					t.Fatalf("Header: %v %v", err, h)
				}
			}
			if len(forms) != 2 {
				t.Fatalf("%d token requests, want 2", len(forms))
			}
			wantAud := c.audience
			if wantAud == "" {
				wantAud = as.URL + "/token"
			}
			jtis := map[string]bool{}
			for _, f := range forms {
				if f.Get("grant_type") != "client_credentials" || f.Get("client_assertion_type") != clientAssertionType ||
					f.Has("client_secret") || f.Get("scope") != "s1" || f.Get("resource") != "https://mcp.example/mcp" {
					t.Errorf("token request %v", f)
				}
				jws, err := jose.ParseSignedCompact(f.Get("client_assertion"), []jose.SignatureAlgorithm{c.alg})
				if err != nil {
					t.Fatalf("client assertion: %v", err)
				}
				payload, err := jws.Verify(c.key.Public())
				if err != nil {
					t.Fatalf("client assertion does not verify with the client's public key: %v", err)
				}
				var cl struct {
					Iss, Sub, Aud, Jti string
					Iat, Exp           int64
				}
				_ = json.Unmarshal(payload, &cl)
				if cl.Iss != "gw-client" || cl.Sub != "gw-client" || cl.Aud != wantAud || cl.Jti == "" || jtis[cl.Jti] ||
					cl.Exp <= cl.Iat || time.Duration(cl.Exp-cl.Iat)*time.Second > 5*time.Minute {
					t.Errorf("client assertion claims %+v (aud want %s)", cl, wantAud)
				}
				jtis[cl.Jti] = true
			}
		})
	}
	for _, bad := range []string{"", "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"} {
		f := filepath.Join(t.TempDir(), "bad.pem")
		_ = os.WriteFile(f, []byte(bad), 0o600)
		_, err := NewCredentialSource(context.Background(), CredentialOptions{Upstream: "u", ClientCredentials: &ClientCredentialsConfig{
			TokenURL: "https://as.example/token", ClientID: "c", KeyFile: f}}, nil)
		if err == nil || strings.Contains(err.Error(), "bm90") {
			t.Errorf("key %q: %v; want an error that does not show the file", bad, err)
		}
	}
}

func pkcs8(t *testing.T, k any) *pem.Block {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
}

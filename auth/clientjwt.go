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
	"net/url"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
)

// private_key_jwt (RFC 7523 §2.2, OpenID Connect Core §9): the gateway authenticates its client credentials grant
// with a short-lived JWT signed by its private key instead of a shared secret; the authorization server holds only
// the public key.

const (
	clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// clientAssertionTTL is how long one client assertion is good for: one token request.
	clientAssertionTTL = 2 * time.Minute
)

// clientKey is a private key read from a PEM file, with the JWS algorithm it signs with.
type clientKey struct {
	key crypto.Signer
	alg jose.SignatureAlgorithm
}

// loadClientKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA). The algorithm follows the key: ES256,
// ES384 or ES512 for the P-256, P-384 and P-521 curves, RS256 for RSA, EdDSA for Ed25519. Errors never show the
// file's content.
func loadClientKey(path string) (clientKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return clientKey{}, fmt.Errorf("client key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return clientKey{}, fmt.Errorf("client key %s: no PEM block", path)
	}
	var k any
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return clientKey{}, fmt.Errorf("client key %s: not a private key (PKCS #8, SEC 1 or PKCS #1 PEM)", path)
	}
	switch key := k.(type) {
	case *ecdsa.PrivateKey:
		switch key.Curve {
		case elliptic.P256():
			return clientKey{key, jose.ES256}, nil
		case elliptic.P384():
			return clientKey{key, jose.ES384}, nil
		case elliptic.P521():
			return clientKey{key, jose.ES512}, nil
		}
		return clientKey{}, fmt.Errorf("client key %s: an EC key on an unsupported curve", path)
	case *rsa.PrivateKey:
		return clientKey{key, jose.RS256}, nil
	case ed25519.PrivateKey:
		return clientKey{key, jose.EdDSA}, nil
	}
	return clientKey{}, fmt.Errorf("client key %s: an unsupported key type %T", path, k)
}

// assertion signs a client assertion: iss and sub the client, aud the authorization server, a fresh jti, and
// exp shortly after now.
func (k clientKey) assertion(clientID, audience string, now time.Time) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("client assertion: %w", err)
	}
	claims, err := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience, "jti": rand.Text(),
		"iat": now.Unix(), "exp": now.Add(clientAssertionTTL).Unix(),
	})
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("client assertion: %w", err)
	}
	return jws.CompactSerialize()
}

// privateKeyJWTSource fetches the client credentials grant authenticated by a fresh client assertion each time.
type privateKeyJWTSource struct {
	ctx      context.Context
	cfg      ClientCredentialsConfig
	key      clientKey
	audience string
}

func (s *privateKeyJWTSource) Token() (*oauth2.Token, error) {
	a, err := s.key.assertion(s.cfg.ClientID, s.audience, time.Now())
	if err != nil {
		return nil, err
	}
	params := url.Values{"client_assertion_type": {clientAssertionType}, "client_assertion": {a}}
	tok, err := paramsGrant(s.ctx, s.cfg.ClientID, s.cfg.TokenURL, s.cfg.Resource, s.cfg.Scopes, params)
	if err == nil {
		return tok, nil
	}
	if code, ok := refusalCode(err); ok {
		return nil, fmt.Errorf("auth: client credentials (private_key_jwt): the authorization server refused (%s)", code)
	}
	return nil, fmt.Errorf("auth: client credentials (private_key_jwt): %w", err)
}

// newPrivateKeyJWTSource returns the client credentials source of cfg authenticated with the key in cfg.KeyFile.
func newPrivateKeyJWTSource(ctx context.Context, cfg ClientCredentialsConfig, client *http.Client) (*ClientCredentialsSource, error) {
	key, err := loadClientKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	if client != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	}
	aud := cfg.AssertionAudience
	if aud == "" {
		aud = cfg.TokenURL
	}
	ts := &privateKeyJWTSource{ctx: ctx, cfg: cfg, key: key, audience: aud}
	return &ClientCredentialsSource{ts: oauth2.ReuseTokenSourceWithExpiry(nil, ts, earlyRefresh)}, nil
}

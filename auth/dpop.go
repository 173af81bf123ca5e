package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// DPoPAlg is the one proof algorithm the gateway signs with: ES256, the algorithm RFC 9449 §11.4 expects every
// server to accept.
const DPoPAlg = "ES256"

// maxDPoPNonces bounds the remembered server nonces: one per origin the gateway talks DPoP to.
const maxDPoPNonces = 1024

// DPoPKey is a replica's DPoP key (RFC 9449): the private half never leaves the process, so an access token
// bound to it (cnf.jkt) is useless to whoever reads it elsewhere. It also remembers the last nonce each server
// supplied (DPoP-Nonce, §8 and §9), so that the next proof to that server carries it. Safe for concurrent use.
type DPoPKey struct {
	priv   *ecdsa.PrivateKey
	signer jose.Signer
	// thumb is the public key's RFC 7638 thumbprint (what a bound token's cnf.jkt holds).
	thumb string

	mu     sync.Mutex
	nonces map[string]string // origin → last DPoP-Nonce
}

// NewDPoPKey makes a fresh P-256 key, for one process alone.
func NewDPoPKey() (*DPoPKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("auth: dpop key: %w", err)
	}
	return newDPoPKey(priv)
}

// DPoPKeyFrom derives the P-256 key from secret (HKDF-SHA256, with a label of its own): every replica given the
// same secret (the key that seals the grants they share) proves the same key, across restarts, so a token bound
// to it works wherever the grant is used. A new secret makes a new key: the tokens bound to the old one are
// refused and refreshed (or connected again).
func DPoPKeyFrom(secret []byte) (*DPoPKey, error) {
	if len(secret) < 16 {
		return nil, errors.New("auth: dpop key: the secret is too short")
	}
	for i := 0; i < 16; i++ {
		// A 32-byte string is a valid P-256 scalar unless it is zero or past the group order (odds of 2^-32):
		// then the next label's.
		d, err := hkdf.Key(sha256.New, secret, nil, fmt.Sprintf("switchboard dpop key v1/%d", i), 32)
		if err != nil {
			return nil, fmt.Errorf("auth: dpop key: %w", err)
		}
		if priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d); err == nil {
			return newDPoPKey(priv)
		}
	}
	return nil, errors.New("auth: dpop key: no valid key derives from the secret")
}

func newDPoPKey(priv *ecdsa.PrivateKey) (*DPoPKey, error) {
	pub := jose.JSONWebKey{Key: &priv.PublicKey, Algorithm: DPoPAlg, Use: "sig"}
	opts := (&jose.SignerOptions{}).WithType("dpop+jwt").WithHeader("jwk", pub)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, opts)
	if err != nil {
		return nil, fmt.Errorf("auth: dpop key: %w", err)
	}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("auth: dpop key: %w", err)
	}
	return &DPoPKey{priv: priv, signer: signer, thumb: base64.RawURLEncoding.EncodeToString(tp), nonces: map[string]string{}}, nil
}

// Thumbprint is the key's JWK SHA-256 thumbprint, base64url: the cnf.jkt of a token bound to it.
func (k *DPoPKey) Thumbprint() string { return k.thumb }

// Proof signs a DPoP proof JWT (RFC 9449 §4.2) for one request: htm the method, htu the URL without query and
// fragment, a fresh jti, iat now, ath the hash of accessToken when one is presented (§4.2: "when the DPoP proof
// is used in conjunction with the presentation of an access token"), and nonce when not "".
func (k *DPoPKey) Proof(method, rawURL, accessToken, nonce string) (string, error) {
	htu, err := HTU(rawURL)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("auth: dpop proof: %w", err)
	}
	claims := map[string]any{
		"jti": base64.RawURLEncoding.EncodeToString(jti),
		"htm": method,
		"htu": htu,
		"iat": time.Now().Unix(),
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("auth: dpop proof: %w", err)
	}
	jws, err := k.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("auth: dpop proof: %w", err)
	}
	return jws.CompactSerialize()
}

// HTU is a proof's htu for rawURL: "The HTTP target URI (Section 7.1 of [RFC9110]) of the request to which the
// JWT is attached, without query and fragment parts" (RFC 9449 §4.2).
func HTU(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("auth: dpop proof: %q is not an absolute URL", rawURL)
	}
	return (&url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}).String(), nil
}

// nonce is the last nonce origin supplied ("" for none).
func (k *DPoPKey) nonce(origin string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nonces[origin]
}

// setNonce remembers origin's latest nonce. RFC 9449 §8.2: a server may supply a new one on any response.
func (k *DPoPKey) setNonce(origin, n string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.nonces[origin]; !ok && len(k.nonces) >= maxDPoPNonces {
		clear(k.nonces) // a nonce forgotten costs one retry
	}
	k.nonces[origin] = n
}

// DPoPTransport adds DPoP proofs to requests: to a POST to TokenURL (a token request, RFC 9449 §5), and to any
// request whose Authorization is "DPoP <token>" (a resource request, §7.1, with ath). A response that asks for a
// nonce (§8: a 400 with error use_dpop_nonce at the authorization server; §9: a 401 with a DPoP challenge of
// error use_dpop_nonce at the resource server) and supplies one in DPoP-Nonce gets the request sent once more
// with a new proof carrying it. Other requests pass untouched.
type DPoPTransport struct {
	// Base sends the requests (nil: http.DefaultTransport).
	Base http.RoundTripper
	// Key signs the proofs. Required.
	Key *DPoPKey
	// TokenURL is the authorization server's token endpoint ("": none).
	TokenURL string
}

var _ http.RoundTripper = (*DPoPTransport)(nil)

// maxDPoPError bounds what is read of a 400 to see whether it asks for a nonce.
const maxDPoPError = 64 << 10

// RoundTrip implements http.RoundTripper.
func (t *DPoPTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	token, resource := cutScheme(r.Header.Get("Authorization"), "DPoP")
	isToken := !resource && t.TokenURL != "" && r.Method == http.MethodPost && sameHTU(r.URL.String(), t.TokenURL)
	if !resource && !isToken {
		return base.RoundTrip(r)
	}
	origin := r.URL.Scheme + "://" + strings.ToLower(r.URL.Host)
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		// Read once, so the request can go again with the nonce.
		var err error
		body, err = io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	send := func(nonce string) (*http.Response, error) {
		proof, err := t.Key.Proof(r.Method, r.URL.String(), token, nonce)
		if err != nil {
			return nil, err
		}
		r2 := r.Clone(r.Context())
		r2.Header.Set("DPoP", proof)
		if body != nil {
			r2.Body = io.NopCloser(bytes.NewReader(body))
			r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		resp, err := base.RoundTrip(r2)
		if err == nil {
			if n := resp.Header.Get("DPoP-Nonce"); n != "" {
				t.Key.setNonce(origin, n)
			}
		}
		return resp, err
	}
	sent := t.Key.nonce(origin)
	resp, err := send(sent)
	if err != nil {
		return nil, err
	}
	fresh := resp.Header.Get("DPoP-Nonce")
	if fresh == "" || fresh == sent || !asksNonce(resp) {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDPoPError))
	_ = resp.Body.Close()
	return send(fresh)
}

// asksNonce reports whether resp asks for a DPoP nonce. A 400's body is read (bounded) and put back.
func asksNonce(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		for _, v := range resp.Header.Values("WWW-Authenticate") {
			if strings.Contains(v, "use_dpop_nonce") {
				return true
			}
		}
		return false
	case http.StatusBadRequest:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxDPoPError))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		var e struct {
			Error string `json:"error"`
		}
		return json.Unmarshal(b, &e) == nil && e.Error == "use_dpop_nonce"
	}
	return false
}

// cutScheme returns the credentials of an Authorization value of the given scheme (compared without case).
func cutScheme(v, scheme string) (string, bool) {
	s, rest, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(s, scheme) {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// sameHTU reports whether a and b name the same target once query and fragment are dropped.
func sameHTU(a, b string) bool {
	ha, err1 := HTU(a)
	hb, err2 := HTU(b)
	return err1 == nil && err2 == nil && ha == hb
}

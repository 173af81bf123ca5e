package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key set refresh limits. go-oidc's RemoteKeySet refetches the JWKS on every
// signature failure, which lets anyone make the gateway hammer the issuer
// with forged tokens; this key set refetches only for an unknown kid (key
// rotation), at most once per minRefresh, plus when the cache is maxAge old
// (so a removed key stops verifying).
const (
	defaultJWKSMinRefresh = 5 * time.Second
	defaultJWKSMaxAge     = 15 * time.Minute
	maxResponseBytes      = 1 << 20
)

// keySet is an oidc.KeySet over a remote JWKS.
type keySet struct {
	url        string
	client     *http.Client
	algs       []jose.SignatureAlgorithm
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time

	fetchMu sync.Mutex // serialises fetches

	mu      sync.RWMutex
	keys    []jose.JSONWebKey
	fetched time.Time // last fetch attempt
	loaded  bool      // a fetch has succeeded
}

func newKeySet(url string, client *http.Client, algs []string, now func() time.Time) *keySet {
	ks := &keySet{url: url, client: client, minRefresh: defaultJWKSMinRefresh, maxAge: defaultJWKSMaxAge, now: now}
	for _, a := range algs {
		ks.algs = append(ks.algs, jose.SignatureAlgorithm(a))
	}
	return ks
}

// unavailableSlot carries, through go-oidc (which flattens the key set's
// error into text), the fact that the JWKS could not be fetched.
type unavailableSlot struct{}

func noteUnavailable(ctx context.Context, err error) error {
	ue := &UnavailableError{Err: err}
	if p, ok := ctx.Value(unavailableSlot{}).(*error); ok {
		*p = ue
	}
	return ue
}

// VerifySignature implements oidc.KeySet.
func (ks *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, ks.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed or disallowed jws: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	hdr := jws.Signatures[0].Header
	ks.mu.RLock()
	stale := !ks.loaded || ks.now().Sub(ks.fetched) > ks.maxAge
	ks.mu.RUnlock()
	if stale {
		if err := ks.refresh(ctx, false); err != nil && !ks.hasKeys() {
			return nil, noteUnavailable(ctx, err)
		}
	}
	cands := ks.candidates(hdr.KeyID, hdr.Algorithm)
	if len(cands) == 0 && hdr.KeyID != "" {
		// An unknown kid: the issuer may have rotated its keys.
		if err := ks.refresh(ctx, true); err != nil {
			return nil, noteUnavailable(ctx, err)
		}
		cands = ks.candidates(hdr.KeyID, hdr.Algorithm)
	}
	for i := range cands {
		if payload, err := jws.Verify(&cands[i]); err == nil {
			return payload, nil
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("no key with kid %q for %s in the issuer's JWKS", hdr.KeyID, hdr.Algorithm)
	}
	return nil, errors.New("signature does not verify")
}

func (ks *keySet) hasKeys() bool {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return len(ks.keys) > 0
}

// candidates returns the keys that may have signed a token with this kid
// and alg: a matching kid (any key when the token has none), a key type
// that fits the algorithm, and not an encryption key.
func (ks *keySet) candidates(kid, alg string) []jose.JSONWebKey {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	var out []jose.JSONWebKey
	for _, k := range ks.keys {
		if (kid != "" && k.KeyID != kid) || k.Use == "enc" || (k.Algorithm != "" && k.Algorithm != alg) || !keyFits(k, alg) {
			continue
		}
		out = append(out, k)
	}
	return out
}

func keyFits(k jose.JSONWebKey, alg string) bool {
	switch k.Key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES")
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// refresh fetches the JWKS. When throttled (an unknown kid asks for it), a
// fetch within minRefresh of the last one is skipped.
func (ks *keySet) refresh(ctx context.Context, throttled bool) error {
	ks.mu.RLock()
	last := ks.fetched
	ks.mu.RUnlock()
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	ks.mu.RLock()
	again := ks.fetched != last // someone fetched while we waited
	recent := ks.now().Sub(ks.fetched) < ks.minRefresh
	ks.mu.RUnlock()
	if again || (throttled && recent) {
		return nil
	}
	keys, err := ks.fetch(ctx)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.fetched = ks.now()
	if err != nil {
		return err
	}
	ks.keys, ks.loaded = keys, true
	return nil
}

func (ks *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS: %s", resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue // a key type this build does not know: skip it, as RFC 7517 §5 says
		}
		if _, sym := k.Key.([]byte); sym {
			continue // never verify with a symmetric key from a public document
		}
		k = k.Public()
		if k.Key == nil {
			continue
		}
		keys = append(keys, k)
	}
	return keys, nil
}

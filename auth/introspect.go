package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxIntrospectionCache bounds the introspection cache (entries).
const maxIntrospectionCache = 10000

// introspector verifies opaque tokens by RFC 7662 and caches the answers by
// the token's SHA-256 (the token itself is never stored as a key).
type introspector struct {
	cfg    IntrospectionConfig
	client *http.Client
	rs     *ResourceServer // the gateway's own; its endpoints share this introspector

	mu    sync.Mutex
	cache map[[32]byte]introEntry
}

type introEntry struct {
	claims  map[string]any // nil = inactive or rejected
	reason  string
	expires time.Time
}

func newIntrospector(cfg IntrospectionConfig, client *http.Client, rs *ResourceServer) *introspector {
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 30 * time.Second
	}
	return &introspector{cfg: cfg, client: client, rs: rs, cache: map[[32]byte]introEntry{}}
}

func (in *introspector) verify(ctx context.Context, tok string) (*Principal, error) {
	key := sha256.Sum256([]byte(tok))
	now := in.rs.now()
	in.mu.Lock()
	e, ok := in.cache[key]
	in.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		claims, reason, err := in.ask(ctx, tok)
		if err != nil {
			return nil, &UnavailableError{Err: err}
		}
		if reason == "" {
			if err := in.check(claims); err != nil {
				reason = err.(*InvalidTokenError).Reason
				claims = nil
			}
		}
		e = introEntry{claims: claims, reason: reason, expires: now.Add(in.cfg.CacheTTL)}
		if exp, ok := numeric(claims["exp"]); ok {
			if t := time.Unix(int64(exp), 0); t.Before(e.expires) {
				e.expires = t
			}
		}
		in.store(key, e, now)
	}
	if e.claims == nil {
		return nil, invalid("%s", e.reason)
	}
	// Times are checked on every use: a cached answer never outlives exp.
	if err := in.rs.checkTimes(e.claims, false); err != nil {
		return nil, err
	}
	return principalFromClaims(e.claims, tok, in.rs.cfg.Issuer), nil
}

func (in *introspector) store(key [32]byte, e introEntry, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.cache) >= maxIntrospectionCache {
		for k, v := range in.cache {
			if !now.Before(v.expires) {
				delete(in.cache, k)
			}
		}
		if len(in.cache) >= maxIntrospectionCache {
			clear(in.cache)
		}
	}
	in.cache[key] = e
}

// ask posts the token to the introspection endpoint. reason is set when the
// token is inactive; err when the endpoint could not answer.
func (in *introspector) ask(ctx context.Context, tok string) (claims map[string]any, reason string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("introspection: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, "", fmt.Errorf("introspection: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("introspection: %s", resp.Status)
	}
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, "", fmt.Errorf("introspection: %w", err)
	}
	if active, _ := claims["active"].(bool); !active {
		return nil, "inactive (introspection)", nil
	}
	return claims, "", nil
}

// check applies the rules that do not depend on the resource to an active
// token: issuer, subject. The audience depends on it (the gateway's own or an
// endpoint's), so Authenticate checks it on every use of the cached answer,
// which every resource of the gateway shares.
func (in *introspector) check(c map[string]any) error {
	if iss, ok := c["iss"].(string); ok && iss != in.rs.cfg.Issuer {
		return invalid("introspection: issuer %q", iss)
	}
	if s, _ := c["sub"].(string); s == "" {
		return invalid("introspection: no sub")
	}
	return nil
}

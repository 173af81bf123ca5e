package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTokens is Redis's TokenStore: a string with PX per principal and upstream.
type redisTokens struct {
	c      redis.UniversalClient
	prefix string
}

var _ TokenStore = (*redisTokens)(nil)

// tokenKey is principal's token for upstream; see tokens.go and the package documentation.
func (r *redisTokens) tokenKey(principal, upstream string) string {
	sum := sha256.Sum256([]byte(principal))
	return r.prefix + "tokens:{" + upstream + "}:" + hex.EncodeToString(sum[:])
}

// PutToken implements TokenStore (SET PX).
func (r *redisTokens) PutToken(ctx context.Context, principal, upstream string, sealed []byte, ttl time.Duration) error {
	if err := checkToken(principal, upstream, sealed, ttl); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		ttl = time.Millisecond // PX counts milliseconds
	}
	if err := r.c.Set(ctx, r.tokenKey(principal, upstream), sealed, ttl).Err(); err != nil {
		return unavailable("put token", err)
	}
	return nil
}

// GetToken implements TokenStore (GET).
func (r *redisTokens) GetToken(ctx context.Context, principal, upstream string) ([]byte, error) {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return nil, err
	}
	b, err := r.c.Get(ctx, r.tokenKey(principal, upstream)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: token of %s for %s", ErrNotFound, principal, upstream)
	}
	if err != nil {
		return nil, unavailable("get token", err)
	}
	return b, nil
}

// DeleteToken implements TokenStore (UNLINK).
func (r *redisTokens) DeleteToken(ctx context.Context, principal, upstream string) error {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return err
	}
	if err := r.c.Unlink(ctx, r.tokenKey(principal, upstream)).Err(); err != nil {
		return unavailable("delete token", err)
	}
	return nil
}

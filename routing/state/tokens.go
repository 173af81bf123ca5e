package state

import (
	"context"
	"fmt"
	"time"
)

// What an id-jag upstream keeps in the shared state (issue 33): each person's access token for the upstream,
// obtained by the two exchanges of Enterprise-Managed Authorization and sealed by the caller, so that every replica
// uses the one token instead of exchanging again for the same person. Unlike a user-oauth grant it is only a cache:
// it expires with the token (shortly before), and a person who has none is exchanged for again, with no one asked.
//
// In Redis each token is a string with PX, <prefix>tokens:{<upstream>}:<hex SHA-256 of the principal>: the
// upstream's hash tag, as its grants have, and the principal hashed so that no pair of opaque upstream and
// principal spells another's key (the hash has a fixed length). Time bounds them; a Memory bounds their count too.

// MaxTokens bounds the tokens a Memory keeps: past it, once the expired ones are swept, a new one is refused with
// ErrFull (the caller still uses the token it holds, and exchanges again next time). Redis counts none: each token
// expires.
const MaxTokens = 100_000

// MaxTokenSize bounds a sealed token: an access token (a JWT, rarely over a few kilobytes), its type and expiry,
// encrypted.
const MaxTokenSize = 16 << 10

// TokenStore keeps the access tokens the gateway obtained for each person at each upstream, sealed by the caller
// (the store never sees a token in the clear), each for a ttl the caller sets: until shortly before the token
// expires. Principals and upstreams are opaque, non-empty and at most 512 bytes (ErrInvalid otherwise). What the
// methods return is the caller's to change.
type TokenStore interface {
	// PutToken stores (or replaces) principal's sealed token for upstream (1 to MaxTokenSize bytes) for ttl (> 0).
	// A Memory refuses a new one with ErrFull when it keeps MaxTokens live tokens.
	PutToken(ctx context.Context, principal, upstream string, sealed []byte, ttl time.Duration) error
	// GetToken returns principal's sealed token for upstream; ErrNotFound if there is none, or it expired.
	GetToken(ctx context.Context, principal, upstream string) ([]byte, error)
	// DeleteToken removes principal's token for upstream (the upstream refused it before it expired). Deleting a
	// missing token is not an error.
	DeleteToken(ctx context.Context, principal, upstream string) error
}

// Both implementations keep tokens.
var (
	_ TokenStore = (*Memory)(nil)
	_ TokenStore = (*Redis)(nil)
)

func checkToken(principal, upstream string, sealed []byte, ttl time.Duration) error {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return err
	}
	if len(sealed) == 0 || len(sealed) > MaxTokenSize {
		return fmt.Errorf("%w: token of %d bytes (1 to %d)", ErrInvalid, len(sealed), MaxTokenSize)
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: token of %s for %s: ttl %v", ErrInvalid, principal, upstream, ttl)
	}
	return nil
}

func errTokensFull(principal, upstream string) error {
	return fmt.Errorf("%w: %d tokens are the most a memory store keeps: token of %s for %s refused",
		ErrFull, MaxTokens, principal, upstream)
}

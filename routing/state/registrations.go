package state

import (
	"context"
	"fmt"
)

// What per-user upstream OAuth (issue 17) keeps of the gateway's own client at an upstream's authorization server:
// the result of an RFC 7591 dynamic registration, sealed by the caller. Every replica reads the one stored, so the
// gateway registers once per upstream and authorization server rather than once per replica or per restart (the
// server may not register the same client twice, and a grant issued to one client_id cannot be refreshed by
// another). Registrations are one hash per upstream, <prefix>registrations:{<upstream>}, field = issuer: the
// upstream's hash tag, as its grants have, and an upstream's registrations bounded by one script (setPin's bounded
// HSET, as PutGrant uses).

// Bounds of the registration table. Past the count bound a new entry is refused with ErrFull; past a size bound
// the argument is refused with ErrInvalid.
const (
	// MaxRegistrationsPerUpstream bounds the authorization servers an upstream keeps a registration at. An upstream
	// has one, or a few while it moves between servers; the bound stops an upstream whose metadata names a new
	// issuer at every discovery from growing the table without end.
	MaxRegistrationsPerUpstream = 64
	// MaxIssuerLen bounds an issuer: a URL (RFC 8414 §2), which servers keep short.
	MaxIssuerLen = 2048
	// MaxRegistrationSize bounds a sealed registration: a client id, a secret and their metadata, encrypted.
	MaxRegistrationSize = 16 << 10
)

// RegistrationStore keeps the gateway's OAuth client registration (RFC 7591) at each upstream's authorization
// server, shared by every replica (registrations.go has the bounds). Upstreams are opaque, non-empty and at most
// 512 bytes; issuers opaque, non-empty and at most MaxIssuerLen bytes (ErrInvalid otherwise). Registrations are
// sealed by the caller: the store never sees a client secret in the clear. What the methods return is the
// caller's to change.
type RegistrationStore interface {
	// PutRegistration stores (or replaces) the sealed registration for upstream at issuer (1 to
	// MaxRegistrationSize bytes). It never expires: the caller replaces or deletes it. ErrFull when issuer is new
	// to upstream and upstream holds MaxRegistrationsPerUpstream registrations.
	PutRegistration(ctx context.Context, upstream, issuer string, sealed []byte) error
	// GetRegistration returns the sealed registration for upstream at issuer; ErrNotFound if there is none.
	GetRegistration(ctx context.Context, upstream, issuer string) ([]byte, error)
	// DeleteRegistration removes the registration for upstream at issuer. Deleting a missing registration is not
	// an error.
	DeleteRegistration(ctx context.Context, upstream, issuer string) error
}

// Both implementations keep registrations.
var (
	_ RegistrationStore = (*Memory)(nil)
	_ RegistrationStore = (*Redis)(nil)
)

func checkUpstreamIssuer(upstream, issuer string) error {
	if err := checkID("upstream", upstream); err != nil {
		return err
	}
	if issuer == "" || len(issuer) > MaxIssuerLen {
		return fmt.Errorf("%w: issuer of length %d (1 to %d)", ErrInvalid, len(issuer), MaxIssuerLen)
	}
	return nil
}

func checkRegistration(upstream, issuer string, sealed []byte) error {
	if err := checkUpstreamIssuer(upstream, issuer); err != nil {
		return err
	}
	if len(sealed) == 0 || len(sealed) > MaxRegistrationSize {
		return fmt.Errorf("%w: registration of %d bytes (1 to %d)", ErrInvalid, len(sealed), MaxRegistrationSize)
	}
	return nil
}

func errRegistrationsFull(upstream, issuer string) error {
	return fmt.Errorf("%w: %d registrations are the most an upstream keeps: registration of %s at %s refused "+
		"(DeleteRegistration of servers gone makes room)", ErrFull, MaxRegistrationsPerUpstream, upstream, issuer)
}

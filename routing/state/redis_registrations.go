package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// redisRegistrations is Redis's RegistrationStore: a hash per upstream.
type redisRegistrations struct {
	c      redis.UniversalClient
	prefix string
}

var _ RegistrationStore = (*redisRegistrations)(nil)

// registrationsKey is upstream's hash of registrations; see registrations.go and the package documentation.
func (r *redisRegistrations) registrationsKey(upstream string) string {
	return r.prefix + "registrations:{" + upstream + "}"
}

// PutRegistration implements RegistrationStore with a bounded HSET (setPin, the script PutGrant and the pins use),
// bounded by MaxRegistrationsPerUpstream.
func (r *redisRegistrations) PutRegistration(ctx context.Context, upstream, issuer string, sealed []byte) error {
	if err := checkRegistration(upstream, issuer, sealed); err != nil {
		return err
	}
	key := r.registrationsKey(upstream)
	ok, err := setPin.Run(ctx, r.c, []string{key}, issuer, sealed, MaxRegistrationsPerUpstream).Int()
	if err != nil {
		return unavailable("put registration", err)
	}
	if ok == 0 {
		return errRegistrationsFull(upstream, issuer)
	}
	return nil
}

// GetRegistration implements RegistrationStore (HGET).
func (r *redisRegistrations) GetRegistration(ctx context.Context, upstream, issuer string) ([]byte, error) {
	if err := checkUpstreamIssuer(upstream, issuer); err != nil {
		return nil, err
	}
	b, err := r.c.HGet(ctx, r.registrationsKey(upstream), issuer).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: registration of %s at %s", ErrNotFound, upstream, issuer)
	}
	if err != nil {
		return nil, unavailable("get registration", err)
	}
	return b, nil
}

// DeleteRegistration implements RegistrationStore (HDEL).
func (r *redisRegistrations) DeleteRegistration(ctx context.Context, upstream, issuer string) error {
	if err := checkUpstreamIssuer(upstream, issuer); err != nil {
		return err
	}
	if err := r.c.HDel(ctx, r.registrationsKey(upstream), issuer).Err(); err != nil {
		return unavailable("delete registration", err)
	}
	return nil
}

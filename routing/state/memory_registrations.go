package state

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// memRegistrations is Memory's RegistrationStore: upstream → issuer → sealed, under one lock, made on first use,
// so that its zero value is empty. Nothing expires.
type memRegistrations struct {
	mu   sync.Mutex
	regs map[string]map[string][]byte
}

var _ RegistrationStore = (*memRegistrations)(nil)

// PutRegistration implements RegistrationStore.
func (r *memRegistrations) PutRegistration(ctx context.Context, upstream, issuer string, sealed []byte) error {
	if err := checkRegistration(upstream, issuer, sealed); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.regs == nil {
		r.regs = map[string]map[string][]byte{}
	}
	byIssuer, ok := r.regs[upstream]
	if !ok {
		byIssuer = map[string][]byte{}
		r.regs[upstream] = byIssuer
	}
	if _, ok := byIssuer[issuer]; !ok && len(byIssuer) >= MaxRegistrationsPerUpstream {
		return errRegistrationsFull(upstream, issuer)
	}
	byIssuer[issuer] = slices.Clone(sealed)
	return nil
}

// GetRegistration implements RegistrationStore.
func (r *memRegistrations) GetRegistration(ctx context.Context, upstream, issuer string) ([]byte, error) {
	if err := checkUpstreamIssuer(upstream, issuer); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sealed, ok := r.regs[upstream][issuer]
	if !ok {
		return nil, fmt.Errorf("%w: registration of %s at %s", ErrNotFound, upstream, issuer)
	}
	return slices.Clone(sealed), nil
}

// DeleteRegistration implements RegistrationStore. An upstream's last registration takes its map with it, as a
// Redis hash goes with its last field.
func (r *memRegistrations) DeleteRegistration(ctx context.Context, upstream, issuer string) error {
	if err := checkUpstreamIssuer(upstream, issuer); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.regs[upstream], issuer)
	if len(r.regs[upstream]) == 0 {
		delete(r.regs, upstream)
	}
	return nil
}

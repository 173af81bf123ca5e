package state

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// memTokens is Memory's TokenStore: one map under one lock, made on first use, so that its zero value is empty.
// Expired tokens are dropped when looked at, and all of them swept when the map is full.
type memTokens struct {
	mu     sync.Mutex
	tokens map[memTokenKey]memToken
}

var _ TokenStore = (*memTokens)(nil)

type memTokenKey struct{ principal, upstream string }

type memToken struct {
	sealed  []byte // never changed once stored: readers copy it
	expires time.Time
}

// PutToken implements TokenStore.
func (m *memTokens) PutToken(ctx context.Context, principal, upstream string, sealed []byte, ttl time.Duration) error {
	if err := checkToken(principal, upstream, sealed, ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	k := memTokenKey{principal, upstream}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[memTokenKey]memToken{}
	}
	if _, ok := m.tokens[k]; !ok && len(m.tokens) >= MaxTokens {
		for k, t := range m.tokens {
			if !now.Before(t.expires) {
				delete(m.tokens, k)
			}
		}
		if len(m.tokens) >= MaxTokens {
			return errTokensFull(principal, upstream)
		}
	}
	m.tokens[k] = memToken{sealed: slices.Clone(sealed), expires: now.Add(ttl)}
	return nil
}

// GetToken implements TokenStore.
func (m *memTokens) GetToken(ctx context.Context, principal, upstream string) ([]byte, error) {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := memTokenKey{principal, upstream}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[k]
	if ok && !time.Now().Before(t.expires) {
		delete(m.tokens, k)
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("%w: token of %s for %s", ErrNotFound, principal, upstream)
	}
	return slices.Clone(t.sealed), nil
}

// DeleteToken implements TokenStore.
func (m *memTokens) DeleteToken(ctx context.Context, principal, upstream string) error {
	if err := checkPrincipalUpstream(principal, upstream); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, memTokenKey{principal, upstream})
	return nil
}

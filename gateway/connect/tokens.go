package connect

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// Timings of a refresh.
const (
	// refreshWindow: a token expiring within it is refreshed before use, so
	// that it does not expire on its way to the upstream. It is the cap:
	// a token that lives less than refreshShare times as long is refreshed
	// in the last refreshShare-th of its life instead (a token issued for
	// 30 s in its last 7.5 s), else a server that issues short tokens
	// would see a refresh before every request.
	refreshWindow = time.Minute
	refreshShare  = 4
	// lockTTL bounds the refresh lock of a crashed replica.
	lockTTL = 30 * time.Second
	// refreshTimeout bounds a refresh and the write of its result, well
	// inside lockTTL: past the lock's life another replica could refresh
	// with a refresh token this one has already rotated out.
	refreshTimeout = 20 * time.Second
	// pollEvery and defaultMaxWaits: how a caller waits for another
	// replica's refresh, about as long as refreshTimeout.
	pollEvery       = 250 * time.Millisecond
	defaultMaxWaits = 80
)

// grant is what is sealed in the store for a principal and an upstream.
type grant struct {
	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Scope is the granted scope, when the server said (RFC 6749 §5.1),
	// for the connections page.
	Scope string `json:"scope,omitempty"`
	// Obtained is when the tokens were issued or last refreshed.
	Obtained time.Time `json:"obtained"`
	// StepUp, when set, is the scope to ask for when the person connects again: the upstream refused the access
	// token for a scope it lacks (403 insufficient_scope, SEP-2350), so the grant is not used until then.
	StepUp []string `json:"stepUp,omitempty"`
	// StepUps counts the step-ups in a row, carried into the grant that answers one, so that an upstream that
	// keeps refusing is not answered by asking the person again and again (maxStepUps).
	StepUps int `json:"stepUps,omitempty"`
	// Issuer is the authorization server that issued the grant: after a migration to another (SEP-2352) the
	// grant is of no use, its refresh token least of all, and the person connects again.
	Issuer string `json:"issuer,omitempty"`
}

// newGrant is tok as kept; prev is the grant it refreshes (nil for a new
// one), whose refresh token and scope stay when the server sends none.
func newGrant(tok *oauth2.Token, prev *grant) grant {
	g := grant{
		AccessToken:  tok.AccessToken,
		TokenType:    tok.TokenType,
		RefreshToken: tok.RefreshToken,
		Expiry:       tok.Expiry.Round(0),
		Obtained:     time.Now().Round(0),
	}
	if s, ok := tok.Extra("scope").(string); ok {
		g.Scope = s
	}
	if prev != nil {
		if g.RefreshToken == "" {
			g.RefreshToken = prev.RefreshToken
		}
		if g.Scope == "" {
			g.Scope = prev.Scope
		}
	}
	return g
}

// expiring reports whether g's access token expires within its window:
// the last refreshShare-th of its lifetime (from Obtained to Expiry), at
// most refreshWindow; refreshWindow when the lifetime is unknown.
func (g grant) expiring(now time.Time) bool {
	return !g.Expiry.IsZero() && g.Expiry.Sub(now) < g.window()
}

// window is how long before its expiry g's access token is refreshed.
func (g grant) window() time.Duration {
	life := g.Expiry.Sub(g.Obtained)
	if g.Obtained.IsZero() || life <= 0 {
		return refreshWindow
	}
	return min(refreshWindow, life/refreshShare)
}

// expired reports whether g's access token is past its expiry.
func (g grant) expired(now time.Time) bool {
	return !g.Expiry.IsZero() && !now.Before(g.Expiry)
}

// stale reports whether g must be refreshed before use: its access token is
// the one the upstream rejected, or expires within its window.
func (g grant) stale(now time.Time, rejected string) bool {
	return g.AccessToken == rejected || g.expiring(now)
}

// usable reports whether g's access token may still be used when it cannot
// be refreshed: not the one rejected, and not expired.
func (g grant) usable(now time.Time, rejected string) bool {
	return g.AccessToken != rejected && !g.expired(now)
}

// token is the access token as the router uses it, without the refresh
// token: that one never leaves this package, so it cannot reach an
// upstream, a client or a log by mistake.
func (g grant) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: g.AccessToken, TokenType: g.TokenType, Expiry: g.Expiry}
}

// sealGrant encodes and seals g for principal's entry for upstream.
func sealGrant(s Sealer, principal, upstream string, g grant) ([]byte, error) {
	if g.AccessToken == "" {
		return nil, errors.New("connect: the authorization server issued no access token")
	}
	plain, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("connect: encoding the grant: %w", err)
	}
	sealed, err := s.Seal(plain, grantAAD(principal, upstream))
	if err != nil {
		return nil, fmt.Errorf("connect: sealing the grant: %w", err)
	}
	return sealed, nil
}

// Tokens gives the router each principal's tokens for each upstream, and
// disconnects. Several Tokens (one per replica) may share a store: a
// refresh runs on one of them at a time. It is safe for concurrent use.
type Tokens struct {
	store    Store
	flows    Flows
	sealer   Sealer
	log      *slog.Logger
	wait     func(context.Context) error
	maxWaits int
}

// TokensConfig configures Tokens.
type TokensConfig struct {
	// Store keeps the grants and the refresh locks. Required.
	Store Store
	// Flows gives each upstream's flow, to refresh and revoke. Required.
	Flows Flows
	// Sealer opens and seals the grants. Required.
	Sealer Sealer
	// Logger receives refresh failures and refused grants, never a token.
	// nil means slog.Default().
	Logger *slog.Logger
	// Wait waits once while another replica refreshes the grant a caller
	// needs (it then reads the grant again); it returns ctx's error when
	// ctx ends first. nil means a 250ms timer.
	Wait func(ctx context.Context) error
	// MaxWaits bounds the waits of one call; 0 means 80 (about 20s, the
	// most a refresh takes).
	MaxWaits int
}

// NewTokens checks cfg and builds the Tokens.
func NewTokens(cfg TokensConfig) (*Tokens, error) {
	if cfg.Store == nil || cfg.Flows == nil || cfg.Sealer == nil {
		return nil, errors.New("connect: tokens: Store, Flows and Sealer are required")
	}
	if cfg.MaxWaits < 0 {
		return nil, fmt.Errorf("connect: tokens: MaxWaits %d", cfg.MaxWaits)
	}
	t := &Tokens{store: cfg.Store, flows: cfg.Flows, sealer: cfg.Sealer, log: cfg.Logger, wait: cfg.Wait, maxWaits: cfg.MaxWaits}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.wait == nil {
		t.wait = timerWait
	}
	if t.maxWaits == 0 {
		t.maxWaits = defaultMaxWaits
	}
	return t, nil
}

// timerWait waits pollEvery, or until ctx ends.
func timerWait(ctx context.Context) error {
	tm := time.NewTimer(pollEvery)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// lockKey names the refresh lock of principal's grant for upstream.
func lockKey(principal, upstream string) string {
	return "refresh:" + principal + "\x00" + upstream
}

// Token returns principal's access token for upstream, refreshed first when
// it expires within a minute (or within the last quarter of its lifetime,
// when that is shorter) and a refresh token exists. Of the callers
// that need the same refresh, on any replica, one refreshes (under the
// store's lock) and the others wait for its result and read it, rather
// than refresh twice: with refresh-token rotation a second refresh would
// reuse a rotated-out token, which a server may take for theft and answer
// by revoking the grant. The returned token has no refresh token.
//
// It returns a *NotConnectedError (errors.Is ErrNotConnected) when there is
// no grant, it does not open, it expired without a refresh token, or the
// server refused to refresh it (invalid_grant: the grant is then deleted).
// When a refresh fails otherwise and the access token has not expired yet,
// that token is returned and the failure logged.
func (t *Tokens) Token(ctx context.Context, principal, upstream string) (*oauth2.Token, error) {
	if err := checkNames(principal, upstream); err != nil {
		return nil, err
	}
	return t.fresh(ctx, principal, upstream, "")
}

// Refresh is called once after the upstream answered 401 to the access
// token rejected, and returns the token to retry with. When the stored
// access token is no longer rejected (another call refreshed it meanwhile)
// that one is returned; otherwise the grant is refreshed now, whatever its
// expiry, under the lock Token uses, so that callers on every replica that
// saw the same 401 refresh once, and the rotated token is stored before it
// is returned. A grant without a refresh token, or one the server refuses
// to refresh (invalid_grant), is deleted and a *NotConnectedError returned:
// its access token is refused, so it is of no more use. Any other failure
// is an error, the grant kept.
func (t *Tokens) Refresh(ctx context.Context, principal, upstream, rejected string) (*oauth2.Token, error) {
	if err := checkNames(principal, upstream); err != nil {
		return nil, err
	}
	if rejected == "" {
		return nil, errors.New("connect: refresh: no rejected access token")
	}
	return t.fresh(ctx, principal, upstream, rejected)
}

// fresh is Token and Refresh: principal's access token for upstream, other
// than rejected ("" for none) and not expiring, refreshed under the lock
// when it must be.
func (t *Tokens) fresh(ctx context.Context, principal, upstream, rejected string) (*oauth2.Token, error) {
	var seen []byte // the stale grant, as first read
	for waits := 0; ; waits++ {
		sealed, g, err := t.load(ctx, principal, upstream)
		if err != nil {
			return nil, err
		}
		if len(g.StepUp) > 0 {
			return nil, &NotConnectedError{Upstream: upstream, Reason: "the upstream asks for more scopes: " + strings.Join(g.StepUp, " ")}
		}
		now := time.Now()
		if seen != nil && !bytes.Equal(sealed, seen) && g.usable(now, rejected) {
			// Another replica refreshed it while this one waited.
			return g.token(), nil
		}
		if !g.stale(now, rejected) {
			return g.token(), nil
		}
		if g.RefreshToken == "" {
			if g.usable(now, rejected) {
				return g.token(), nil
			}
			if g.AccessToken == rejected {
				t.forget(ctx, principal, upstream, sealed)
				t.log.Info("connect: the upstream refused a grant that cannot be refreshed; it is deleted", "upstream", upstream, "sub", subject(principal))
				return nil, &NotConnectedError{Upstream: upstream, Reason: "the upstream refused the access token and there is no refresh token"}
			}
			return nil, &NotConnectedError{Upstream: upstream, Reason: "the access token expired and there is no refresh token"}
		}
		if seen == nil {
			seen = sealed
		}
		unlock, ok, err := t.store.TryLock(ctx, lockKey(principal, upstream), lockTTL)
		if err != nil {
			return nil, fmt.Errorf("connect: locking the refresh of %s: %w", upstream, err)
		}
		if ok {
			return t.refreshLocked(ctx, principal, upstream, rejected, seen, unlock)
		}
		if waits >= t.maxWaits {
			if g.usable(now, rejected) {
				return g.token(), nil
			}
			return nil, fmt.Errorf("connect: %s: another replica is still refreshing the grant", upstream)
		}
		if err := t.wait(ctx); err != nil {
			return nil, fmt.Errorf("connect: waiting for the refresh of %s: %w", upstream, err)
		}
	}
}

// refreshLocked refreshes the grant under the lock, which it releases.
// seen is the grant the caller found stale; rejected is as for fresh.
func (t *Tokens) refreshLocked(ctx context.Context, principal, upstream, rejected string, seen []byte, unlock func()) (*oauth2.Token, error) {
	defer unlock()
	// Read again under the lock: another replica may have refreshed
	// between the caller's read and the lock.
	sealed, g, err := t.load(ctx, principal, upstream)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if (!bytes.Equal(sealed, seen) && g.usable(now, rejected)) || !g.stale(now, rejected) {
		return g.token(), nil
	}
	// Detached from the caller: once the request is sent, the server may
	// rotate the refresh token, and only storing its answer keeps the grant
	// alive. Bounded inside the lock's life.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
	defer cancel()
	flow, err := t.flows.Flow(rctx, upstream)
	if err != nil {
		return t.keepOrFail(g, upstream, rejected, fmt.Errorf("connect: no flow for %s: %w", upstream, err))
	}
	if g.Issuer != "" && g.Issuer != flow.Issuer() {
		// Never sent to the new server: a refresh token is the old one's.
		t.forget(rctx, principal, upstream, sealed)
		t.log.Info("connect: the upstream's authorization server changed; the grant of the old one is deleted",
			"upstream", upstream, "sub", subject(principal))
		return nil, &NotConnectedError{Upstream: upstream, Reason: "the upstream's authorization server changed"}
	}
	nt, _, err := flow.Refresh(rctx, &oauth2.Token{AccessToken: g.AccessToken, TokenType: g.TokenType, RefreshToken: g.RefreshToken, Expiry: g.Expiry})
	if err != nil {
		var oe *upstreamauth.OAuthError
		if errors.As(err, &oe) && oe.Code == "invalid_grant" {
			t.forget(rctx, principal, upstream, sealed)
			t.log.Warn("connect: the authorization server refused to refresh a grant; it is deleted", "upstream", upstream, "sub", subject(principal), "err", err)
			return nil, &NotConnectedError{Upstream: upstream, Reason: "the authorization server refused to refresh the grant (invalid_grant)"}
		}
		clientRejected(t.flows, upstream, err)
		return t.keepOrFail(g, upstream, rejected, fmt.Errorf("connect: refreshing %s: %w", upstream, err))
	}
	ng := newGrant(nt, &g)
	out, err := sealGrant(t.sealer, principal, upstream, ng)
	if err != nil {
		return nil, err
	}
	// Stored before it is returned: a rotated refresh token is the only one
	// that still works, and a real oidc-provider revokes the whole grant
	// when a rotated-out one is used again.
	if err := t.store.PutGrant(rctx, principal, upstream, out); err != nil {
		return nil, fmt.Errorf("connect: storing the refreshed grant of %s: %w", upstream, err)
	}
	return ng.token(), nil
}

// keepOrFail answers a refresh that failed for a reason other than the
// grant's end: the current token while it lasts and is not the one
// rejected, else the error.
func (t *Tokens) keepOrFail(g grant, upstream, rejected string, err error) (*oauth2.Token, error) {
	if g.usable(time.Now(), rejected) {
		t.log.Warn("connect: refresh failed; the current token is used while it lasts", "upstream", upstream, "err", err)
		return g.token(), nil
	}
	return nil, err
}

// forget deletes the grant the server refused, unless it changed since it
// was read as sealed (the person connected again meanwhile).
func (t *Tokens) forget(ctx context.Context, principal, upstream string, sealed []byte) {
	now, err := t.store.GetGrant(ctx, principal, upstream)
	if err != nil || !bytes.Equal(now, sealed) {
		return
	}
	if err := t.store.DeleteGrant(ctx, principal, upstream); err != nil {
		t.log.Error("connect: deleting a refused grant", "upstream", upstream, "sub", subject(principal), "err", err)
	}
}

// load reads and opens principal's grant for upstream.
func (t *Tokens) load(ctx context.Context, principal, upstream string) ([]byte, grant, error) {
	sealed, err := t.store.GetGrant(ctx, principal, upstream)
	if errors.Is(err, state.ErrNotFound) {
		return nil, grant{}, &NotConnectedError{Upstream: upstream, Reason: "no grant"}
	}
	if err != nil {
		return nil, grant{}, fmt.Errorf("connect: reading the grant for %s: %w", upstream, err)
	}
	plain, err := t.sealer.Open(sealed, grantAAD(principal, upstream))
	if err != nil {
		// vault: a blob under a retired key is treated as absent, "the user
		// connects again". It is not deleted: a replica missing a key
		// during a rotation must not destroy grants the others can open.
		t.log.Warn("connect: a grant does not open; the person must connect again", "upstream", upstream, "sub", subject(principal), "err", err)
		return nil, grant{}, &NotConnectedError{Upstream: upstream, Reason: "the stored grant does not open"}
	}
	g, ok := decodeGrant(plain)
	if !ok {
		return nil, grant{}, &NotConnectedError{Upstream: upstream, Reason: "the stored grant is unreadable"}
	}
	return sealed, g, nil
}

// open opens and decodes a sealed grant, quietly: for RevokeUpstream,
// which counts those that do not.
func (t *Tokens) open(principal, upstream string, sealed []byte) (grant, bool) {
	plain, err := t.sealer.Open(sealed, grantAAD(principal, upstream))
	if err != nil {
		return grant{}, false
	}
	return decodeGrant(plain)
}

// decodeGrant decodes an opened grant; json's error is not kept, since it
// may quote the plaintext.
func decodeGrant(plain []byte) (grant, bool) {
	var g grant
	if err := json.Unmarshal(plain, &g); err != nil || g.AccessToken == "" {
		return grant{}, false
	}
	return g, true
}

// Disconnect revokes principal's grant for upstream at the authorization
// server when it offers revocation (RFC 7009), and deletes it. A grant
// that is not there is not an error. Revocation is best effort: a server
// that fails it is logged, and the grant is deleted all the same, since
// the person asked that the gateway stop acting for them.
func (t *Tokens) Disconnect(ctx context.Context, principal, upstream string) error {
	if err := checkNames(principal, upstream); err != nil {
		return err
	}
	// The refresh lock, so that a refresh in flight does not store its
	// result after the delete. Not having it after the waits is no reason
	// to keep the grant: the revocation kills the refresh token anyway.
	for waits := 0; ; waits++ {
		unlock, ok, err := t.store.TryLock(ctx, lockKey(principal, upstream), lockTTL)
		if err != nil {
			return fmt.Errorf("connect: locking the grant of %s: %w", upstream, err)
		}
		if ok {
			defer unlock()
			break
		}
		if waits >= t.maxWaits {
			break
		}
		if err := t.wait(ctx); err != nil {
			return fmt.Errorf("connect: waiting for the refresh of %s: %w", upstream, err)
		}
	}
	_, g, err := t.load(ctx, principal, upstream)
	var nc *NotConnectedError
	switch {
	case errors.As(err, &nc) && nc.Reason == "no grant":
		return nil
	case err != nil && nc == nil:
		return err
	case err == nil:
		t.revoke(ctx, upstream, g)
	}
	if err := t.store.DeleteGrant(ctx, principal, upstream); err != nil {
		return fmt.Errorf("connect: deleting the grant for %s: %w", upstream, err)
	}
	t.log.Info("connect: disconnected", "upstream", upstream, "sub", subject(principal))
	return nil
}

// revoke revokes g's tokens at upstream's authorization server, best
// effort: a failure is logged.
func (t *Tokens) revoke(ctx context.Context, upstream string, g grant) {
	flow, err := t.flows.Flow(ctx, upstream)
	if err != nil {
		t.log.Warn("connect: cannot revoke: no flow for the upstream", "upstream", upstream, "err", err)
		return
	}
	if err := revokeGrant(ctx, flow, g); err != nil && !errors.Is(err, upstreamauth.ErrNoRevocation) {
		// upstreamauth's errors never carry the token.
		t.log.Warn("connect: revocation failed; the grant is deleted here anyway", "upstream", upstream, "err", err)
	}
}

// revokeGrant revokes g's tokens with flow, the refresh token first: at
// servers that tie the two, that revokes the grant ("If the token passed to
// the request is a refresh token and the authorization server supports the
// revocation of access tokens, then the authorization server SHOULD also
// invalidate all access tokens based on the same authorization grant", RFC
// 7009 §2.1); the access token after it, for servers that do not (a SHOULD
// is not a promise). A server that does not revoke access tokens
// (unsupported_token_type, RFC 7009 §2.2.1: a JWT access token simply
// expires) is not a failure. It returns ErrNoRevocation, having sent
// nothing, when the server offers no revocation, and otherwise each
// failure, named by the token's kind.
func revokeGrant(ctx context.Context, flow *upstreamauth.Flow, g grant) error {
	type revocation struct{ token, hint string }
	var todo []revocation
	if g.RefreshToken != "" {
		todo = append(todo, revocation{g.RefreshToken, upstreamauth.HintRefreshToken})
	}
	if !g.expired(time.Now()) {
		todo = append(todo, revocation{g.AccessToken, upstreamauth.HintAccessToken})
	}
	var errs []error
	for _, r := range todo {
		err := flow.Revoke(ctx, r.token, r.hint)
		var oe *upstreamauth.OAuthError
		switch {
		case errors.Is(err, upstreamauth.ErrNoRevocation):
			return err // nothing to tell the server; forgetting is all there is
		case r.hint == upstreamauth.HintAccessToken && errors.As(err, &oe) && oe.Code == "unsupported_token_type":
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", strings.TrimSuffix(r.hint, "_token"), err))
		}
	}
	return errors.Join(errs...)
}

// Connected reports whether principal holds a usable grant for upstream:
// one that opens and has not expired, or can be refreshed. It reads the
// store once and refreshes nothing, so that it may run on every call.
func (t *Tokens) Connected(ctx context.Context, principal, upstream string) (bool, error) {
	if err := checkNames(principal, upstream); err != nil {
		return false, err
	}
	_, g, err := t.load(ctx, principal, upstream)
	if errors.Is(err, ErrNotConnected) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(g.StepUp) == 0 && (g.RefreshToken != "" || !g.expired(time.Now())), nil
}

// GrantStatus is what the connections page shows of a grant; no token.
type GrantStatus struct {
	// Scopes are the granted scopes, when the authorization server said.
	Scopes []string
	// Expiry is when the access token expires (zero: unknown).
	Expiry time.Time
	// Obtained is when the tokens were issued or last refreshed.
	Obtained time.Time
	// Refreshable says whether there is a refresh token: a grant that is
	// not refreshable ends at Expiry.
	Refreshable bool
}

// Status describes principal's grant for upstream, for the connections
// page. It returns a *NotConnectedError (errors.Is ErrNotConnected) when
// there is none, or it does not open.
func (t *Tokens) Status(ctx context.Context, principal, upstream string) (GrantStatus, error) {
	if err := checkNames(principal, upstream); err != nil {
		return GrantStatus{}, err
	}
	_, g, err := t.load(ctx, principal, upstream)
	if err != nil {
		return GrantStatus{}, err
	}
	return GrantStatus{Scopes: strings.Fields(g.Scope), Expiry: g.Expiry, Obtained: g.Obtained, Refreshable: g.RefreshToken != ""}, nil
}

// revokeConcurrency bounds the revocations RevokeUpstream has in flight.
const revokeConcurrency = 8

// RevokeUpstream is the admin revoking a whole upstream: every grant for it
// is deleted, and returned is how many there were. When the authorization
// server offers revocation, each listed one (Store.UpstreamGrants) is
// also revoked there, a few at a time, best effort, after the
// delete, so that the gateway stops using them at once; failures are
// logged as a count and the first error, never a token. Revocation ends
// when ctx does.
func (t *Tokens) RevokeUpstream(ctx context.Context, upstream string) (int, error) {
	if upstream == "" || strings.ContainsRune(upstream, 0) {
		return 0, errors.New("connect: an upstream is required, without NUL")
	}
	// Listed before the delete, which leaves nothing to list.
	listed, err := t.store.UpstreamGrants(ctx, upstream)
	if err != nil {
		return 0, fmt.Errorf("connect: listing the grants of %s: %w", upstream, err)
	}
	n, err := t.store.DeleteUpstreamGrants(ctx, upstream)
	if err != nil {
		return 0, fmt.Errorf("connect: deleting the grants of %s: %w", upstream, err)
	}
	t.log.Info("connect: deleted every grant of an upstream", "upstream", upstream, "grants", n)
	if len(listed) > 0 {
		t.revokeAll(ctx, upstream, listed)
	}
	return n, nil
}

// revokeAll revokes the listed grants at upstream's authorization server,
// revokeConcurrency at a time, and logs the outcome once.
func (t *Tokens) revokeAll(ctx context.Context, upstream string, listed map[string][]byte) {
	flow, err := t.flows.Flow(ctx, upstream)
	if err != nil {
		t.log.Warn("connect: cannot revoke the deleted grants: no flow for the upstream", "upstream", upstream, "err", err)
		return
	}
	var (
		mu                       sync.Mutex
		sent, failed, unreadable int
		firstErr                 error
		noRevocation             bool
		wg                       sync.WaitGroup
		slots                    = make(chan struct{}, revokeConcurrency)
	)
	for principal, sealed := range listed {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			g, ok := t.open(principal, upstream, sealed)
			if !ok {
				mu.Lock()
				unreadable++
				mu.Unlock()
				return
			}
			err := revokeGrant(ctx, flow, g)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, upstreamauth.ErrNoRevocation):
				noRevocation = true
			case err != nil:
				failed++
				if firstErr == nil {
					firstErr = err
				}
			default:
				sent++
			}
		})
	}
	wg.Wait()
	switch {
	case noRevocation:
		t.log.Info("connect: the authorization server offers no revocation; the grants are only deleted", "upstream", upstream)
	case failed > 0 || unreadable > 0 || ctx.Err() != nil:
		t.log.Warn("connect: some deleted grants were not revoked at the authorization server", "upstream", upstream,
			"revoked", sent, "failed", failed, "unreadable", unreadable, "of", len(listed), "err", cmp.Or(firstErr, ctx.Err()))
	default:
		t.log.Info("connect: the deleted grants were revoked at the authorization server", "upstream", upstream, "revoked", sent)
	}
}

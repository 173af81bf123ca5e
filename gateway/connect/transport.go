package connect

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
)

// RetryOn401 is the HTTP transport of a per-user upstream: a 403 insufficient_scope marks the grant for a step-up
// (see stepUp), and a request that carried a person's access token and got 401 is sent once more with a refreshed token (issue 17: "refresh before expiry, and once on an upstream
// 401"). The upstream may have revoked the token, or expired it early; Tokens.Refresh refreshes it once across
// every replica, or deletes a grant that cannot be refreshed, so the next call asks the person to connect again.
type RetryOn401 struct {
	// Base sends the requests.
	Base http.RoundTripper
	// Tokens refreshes the rejected token.
	Tokens *Tokens
	// Upstream is the upstream's name.
	Upstream string
	// Principal gives the principal key a request is made for ("" for none: the request is not retried).
	Principal func(ctx context.Context) string
	// Logger receives failed refreshes, never a token. nil means slog.Default().
	Logger *slog.Logger
	// Moves, when set, is asked after a 401 whether the upstream's authorization server changed (Discovery is
	// one): the refresh then finds the new server's flow, and ends the grant of the old one.
	Moves ServerMoves
}

// ServerMoves tells whether an upstream's authorization server changed (SEP-2352).
type ServerMoves interface {
	Moved(ctx context.Context, upstream string, ch upstreamauth.Challenge) bool
}

var _ ServerMoves = (*Discovery)(nil)

var _ http.RoundTripper = (*RetryOn401)(nil)

// stepUp handles a 403: one with a Bearer insufficient_scope challenge marks the person's grant for a step-up
// (Tokens.StepUp), so that the next call asks them to connect again with the scopes the challenge names (SEP-2350,
// "Step-Up Authorization Flow"). The 403 itself goes back: the request is not retried, the person has to act.
func (t *RetryOn401) stepUp(ctx context.Context, resp *http.Response, principal, rejected string, bearer bool) {
	ch, ok := upstreamauth.ParseChallenge(strings.Join(resp.Header.Values("WWW-Authenticate"), ", "))
	if !ok || ch.Error != "insufficient_scope" || principal == "" || !bearer {
		return
	}
	if _, err := t.Tokens.StepUp(ctx, principal, t.Upstream, rejected, ch.Scopes); err != nil {
		log := t.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Info("connect: an upstream asked for more scopes, and the grant could not be marked", "upstream", t.Upstream, "err", err)
	}
}

// RoundTrip implements http.RoundTripper.
func (t *RetryOn401) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	principal := t.Principal(r.Context())
	// A DPoP token (RFC 9449 §7.1) is refreshed and retried like a Bearer one; its proofs are the Base's.
	scheme, rejected, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	bearer := scheme == "Bearer" || scheme == "DPoP"
	if resp.StatusCode == http.StatusForbidden {
		t.stepUp(r.Context(), resp, principal, rejected, bearer)
		return resp, nil
	}
	if principal == "" || !bearer || !auth.Replayable(r) {
		return resp, nil
	}
	if t.Moves != nil {
		ch, _ := upstreamauth.ParseChallenge(strings.Join(resp.Header.Values("WWW-Authenticate"), ", "))
		t.Moves.Moved(r.Context(), t.Upstream, ch)
	}
	tok, err := t.Tokens.Refresh(r.Context(), principal, t.Upstream, rejected)
	if err != nil {
		log := t.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Info("connect: an upstream refused a person's token, and it could not be refreshed", "upstream", t.Upstream, "err", err)
		return resp, nil
	}
	return auth.Resend(t.Base, r, resp, http.Header{"Authorization": {tok.Type() + " " + tok.AccessToken}})
}

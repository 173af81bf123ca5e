package connect

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Step-up authorization (SEP-2350): an upstream's 403 insufficient_scope marks the person's grant, and their next
// call asks them to connect again with the granted and the challenged scopes together.

// maxStepUps bounds the step-ups in a row: with the first connection, at most three authorizations for one
// upstream that keeps answering insufficient_scope ("Clients SHOULD implement retry limits").
const maxStepUps = 2

// StepUp is called after the upstream answered 403 insufficient_scope to the access token rejected, with the
// scopes its challenge asks for. It marks principal's grant for a step-up: the grant is not used (Connected is
// false, Token a *NotConnectedError), so the next call asks the person to connect again, and the authorization
// asks for the granted scopes and the required ones together (StepUpScopes). It reports false, marking
// nothing, when the grant no longer holds the rejected token (another call got a new one), when the scopes are
// already granted (asking again would not help), or after maxStepUps step-ups in a row: the retry limit.
func (t *Tokens) StepUp(ctx context.Context, principal, upstream, rejected string, required []string) (bool, error) {
	if err := checkNames(principal, upstream); err != nil {
		return false, err
	}
	unlock, ok, err := t.store.TryLock(ctx, lockKey(principal, upstream), lockTTL)
	if err != nil || !ok {
		return false, err // another replica holds the grant: it refreshes or steps it up
	}
	defer unlock()
	_, g, err := t.load(ctx, principal, upstream)
	if err != nil {
		return false, err
	}
	granted := strings.Fields(g.Scope)
	if g.AccessToken != rejected || len(g.StepUp) > 0 {
		return false, nil
	}
	if (len(granted) > 0 && covers(granted, required)) || g.StepUps >= maxStepUps {
		t.log.Warn("connect: the upstream still refuses the access token for its scope; not asking the person again",
			"upstream", upstream, "sub", subject(principal), "required", required, "granted", granted, "stepUps", g.StepUps)
		return false, nil
	}
	g.StepUp = unionScopes(granted, required)
	g.StepUps++
	sealed, err := sealGrant(t.sealer, principal, upstream, g)
	if err != nil {
		return false, err
	}
	if err := t.store.PutGrant(ctx, principal, upstream, sealed); err != nil {
		return false, fmt.Errorf("connect: storing the step-up of %s: %w", upstream, err)
	}
	t.log.Info("connect: the upstream asks for more scopes; the person is asked to connect again", "upstream", upstream,
		"sub", subject(principal), "scopes", g.StepUp)
	return true, nil
}

// unionScopes is a's scopes then b's, each once.
func unionScopes(a, b []string) []string {
	var out []string
	for _, s := range slices.Concat(a, b) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// stepUp reads principal's grant for upstream, quietly: the scopes a pending step-up asks for (nil for none)
// and the step-ups in a row so far, for the handler's authorization and the grant that answers it.
func stepUp(ctx context.Context, store Store, sealer Sealer, principal, upstream string) ([]string, int) {
	sealed, err := store.GetGrant(ctx, principal, upstream)
	if err != nil {
		return nil, 0
	}
	plain, err := sealer.Open(sealed, grantAAD(principal, upstream))
	if err != nil {
		return nil, 0
	}
	g, ok := decodeGrant(plain)
	if !ok || len(g.StepUp) == 0 {
		return nil, 0
	}
	return g.StepUp, g.StepUps
}

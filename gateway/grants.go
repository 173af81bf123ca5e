package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// GrantRevoker revokes per-user upstream grants (issue 17) for the admin API: at the upstream's authorization
// server when it offers revocation, and in the gateway's store.
type GrantRevoker interface {
	// Revoke revokes principal's grant for upstream; revoking one that does not exist is not an error.
	Revoke(ctx context.Context, principal, upstream string) error
	// RevokeUpstream revokes every grant for upstream and reports how many there were.
	RevokeUpstream(ctx context.Context, upstream string) (int, error)
	// Known reports whether upstream is a per-user upstream.
	Known(upstream string) bool
}

// revokeGrants serves POST /admin/grants/revoke: {"upstream":"github","principal":"<issuer>|<subject>"} revokes
// one person's grant, {"upstream":"github"} every grant for the upstream.
func (a *adminAPI) revokeGrants(w http.ResponseWriter, r *http.Request) {
	g := a.grants
	if g == nil {
		writeValue(w, http.StatusNotFound, map[string]string{"error": "no upstream is configured with type: user-oauth"})
		return
	}
	var body struct {
		Upstream  string `json:"upstream"`
		Principal string `json:"principal"`
	}
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	d.DisallowUnknownFields()
	err := d.Decode(&body)
	if err == nil && d.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil || body.Upstream == "" {
		msg := `the body must be a JSON object {"upstream":"github","principal":"<issuer>|<subject>"}, or {"upstream":"github"} for every grant of the upstream`
		if err != nil {
			msg += ": " + err.Error()
		}
		writeValue(w, http.StatusBadRequest, map[string]string{"error": msg})
		return
	}
	if !g.Known(body.Upstream) {
		writeValue(w, http.StatusNotFound, map[string]string{"error": "no upstream named " + body.Upstream + " has type: user-oauth"})
		return
	}
	if body.Principal != "" {
		if err := g.Revoke(r.Context(), body.Principal, body.Upstream); err != nil {
			a.log.Error("admin: revoking a grant failed", "upstream", body.Upstream, "err", err)
			writeValue(w, http.StatusServiceUnavailable, map[string]string{"error": "the grant could not be revoked: " + err.Error()})
			return
		}
		a.log.Info("admin: grant revoked", "upstream", body.Upstream, "principal", body.Principal)
		writeValue(w, http.StatusOK, map[string]int{"revoked": 1})
		return
	}
	n, err := g.RevokeUpstream(r.Context(), body.Upstream)
	if err != nil {
		a.log.Error("admin: revoking an upstream's grants failed", "upstream", body.Upstream, "revoked", n, "err", err)
		writeValue(w, http.StatusServiceUnavailable, map[string]any{"error": "not every grant could be revoked: " + err.Error(), "revoked": n})
		return
	}
	a.log.Info("admin: every grant of an upstream revoked", "upstream", body.Upstream, "revoked", n)
	writeValue(w, http.StatusOK, map[string]int{"revoked": n})
}

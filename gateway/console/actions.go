package console

import (
	"errors"
	"net/http"
)

// The actions. Each has passed the admin and CSRF checks (ServeHTTP), acts
// through the Source, logs who did what, and redirects to its page with a
// flash key.

func (c *Console) approve(w http.ResponseWriter, r *http.Request, by string) {
	ref := PinRef{
		Upstream: r.PostFormValue("upstream"),
		Kind:     r.PostFormValue("kind"),
		Name:     r.PostFormValue("name"),
		Seen:     r.PostFormValue("seen"),
	}
	if ref.Upstream == "" || ref.Kind == "" || ref.Name == "" || ref.Seen == "" {
		c.renderError(w, r, http.StatusBadRequest, "Bad request", "The form did not say which definition to approve.")
		return
	}
	key := "approved"
	switch err := c.src.Approve(r.Context(), by, ref); {
	case errors.Is(err, ErrStale):
		key = "approve-stale"
	case errors.Is(err, ErrNotFound):
		key = "approve-gone"
	case err != nil:
		c.log.Error("console: approving a pin failed", "by", by, "upstream", ref.Upstream, "kind", ref.Kind, "name", ref.Name, "err", err)
		key = "approve-failed"
	default:
		c.log.Info("console: pin approved", "by", by, "upstream", ref.Upstream, "kind", ref.Kind, "name", ref.Name, "seen", ref.Seen)
	}
	c.redirect(w, r, "/pins", key, 0)
}

func (c *Console) approveAll(w http.ResponseWriter, r *http.Request, by string) {
	n, err := c.src.ApproveAll(r.Context(), by)
	if err != nil {
		c.log.Error("console: approving every pin failed", "by", by, "err", err)
		c.redirect(w, r, "/pins", "approve-failed", 0)
		return
	}
	c.log.Info("console: every changed definition approved", "by", by, "count", n)
	c.redirect(w, r, "/pins", "approved-all", n)
}

func (c *Console) revoke(w http.ResponseWriter, r *http.Request, by string) {
	up, subject := r.PostFormValue("upstream"), r.PostFormValue("subject")
	if up == "" || subject == "" {
		c.renderError(w, r, http.StatusBadRequest, "Bad request", "The form did not say whose grant to revoke.")
		return
	}
	key := "revoked"
	switch err := c.src.Revoke(r.Context(), by, up, subject); {
	case errors.Is(err, ErrNotFound):
		key = "revoke-gone"
	case err != nil:
		c.log.Error("console: revoking a grant failed", "by", by, "upstream", up, "subject", subject, "err", err)
		key = "revoke-failed"
	default:
		c.log.Info("console: grant revoked", "by", by, "upstream", up, "subject", subject)
	}
	c.redirect(w, r, "/people", key, 0)
}

func (c *Console) revokeAll(w http.ResponseWriter, r *http.Request, by string) {
	up := r.PostFormValue("upstream")
	if up == "" {
		c.renderError(w, r, http.StatusBadRequest, "Bad request", "The form did not say which upstream's grants to revoke.")
		return
	}
	n, err := c.src.RevokeAll(r.Context(), by, up)
	switch {
	case errors.Is(err, ErrNotFound):
		c.redirect(w, r, "/people", "revoke-gone", 0)
	case err != nil:
		c.log.Error("console: revoking an upstream's grants failed", "by", by, "upstream", up, "err", err)
		c.redirect(w, r, "/people", "revoke-failed", 0)
	default:
		c.log.Info("console: every grant of an upstream revoked", "by", by, "upstream", up, "count", n)
		c.redirect(w, r, "/people", "revoked-all", n)
	}
}

func (c *Console) reload(w http.ResponseWriter, r *http.Request, by string) {
	res, err := c.src.Reload(r.Context(), by)
	switch {
	case err != nil:
		c.log.Error("console: reload failed", "by", by, "err", err)
		c.redirect(w, r, "/config", "reload-failed", 0)
	case !res.OK:
		c.log.Warn("console: reload refused", "by", by, "problems", len(res.Problems))
		c.redirect(w, r, "/config", "reload-refused", 0)
	default:
		c.log.Info("console: reloaded", "by", by, "summary", res.Summary)
		c.redirect(w, r, "/config", "reloaded", 0)
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-mcp/switchboard/routing"
)

// Reloader reloads the configuration; cmd supplies it, since the config file is its business.
type Reloader func() (routing.ReloadResult, error)

// adminAPI is what operators reach: the admin API (Server.AdminHandler, on its own loopback listener), and the
// health endpoints /healthz and /readyz (health.go) on the main one.
type adminAPI struct {
	op     Operator
	grants GrantRevoker // nil: no per-user upstream
	ready  func(context.Context) error
	log    *slog.Logger
}

// handler serves the admin API (Server.AdminHandler).
func (a *adminAPI) handler(reload Reloader) http.Handler {
	mux := chi.NewRouter()
	mux.Use(adminGuard)
	mux.Get("/admin/upstreams", func(w http.ResponseWriter, _ *http.Request) {
		writeValue(w, http.StatusOK, map[string]any{"upstreams": a.op.Status(), "sessions": a.op.SessionCount(), "conflicts": a.op.Conflicts(), "drift": a.op.Drifts()})
	})
	mux.Get("/admin/pins", func(w http.ResponseWriter, _ *http.Request) {
		writeValue(w, http.StatusOK, map[string]any{"drift": a.op.Drifts()})
	})
	mux.Post("/admin/pins/approve", a.approvePins)
	mux.Post("/admin/grants/revoke", a.revokeGrants)
	mux.Post("/admin/upstreams/{name}/restart", func(w http.ResponseWriter, r *http.Request) {
		a.result(w, a.op.RestartUpstream(chi.URLParam(r, "name")))
	})
	mux.Post("/admin/upstreams/{name}/drain", func(w http.ResponseWriter, r *http.Request) {
		a.result(w, a.op.DrainUpstream(chi.URLParam(r, "name"), true))
	})
	mux.Post("/admin/upstreams/{name}/undrain", func(w http.ResponseWriter, r *http.Request) {
		a.result(w, a.op.DrainUpstream(chi.URLParam(r, "name"), false))
	})
	mux.Post("/admin/reload", func(w http.ResponseWriter, _ *http.Request) {
		if reload == nil {
			writeValue(w, http.StatusNotImplemented, map[string]string{"error": "this gateway has no config file to reload"})
			return
		}
		res, err := reload()
		if err != nil {
			writeValue(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
			return
		}
		writeValue(w, http.StatusOK, res)
	})
	return mux
}

// adminGuard keeps browsers out of the admin API. Its listener is loopback-only, but a page in an operator's
// browser can still reach it: by DNS rebinding (a foreign Host), or by a cross-site request (an Origin, and a
// "simple" request that needs no CORS preflight: a form or text/plain POST). So the Host must name a loopback
// address, any Origin is refused (no browser page is a client of this API), and a state change must say
// Content-Type: application/json, which no page can send across sites without a preflight this API never grants.
func adminGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !loopbackHost(r.Host):
			writeValue(w, http.StatusForbidden, map[string]string{"error": "Host " + quote(r.Host) + " is not a loopback address; the admin API answers only requests addressed to its loopback listener"})
		case r.Header.Get("Origin") != "":
			writeValue(w, http.StatusForbidden, map[string]string{"error": "requests from browser pages (with an Origin header) are refused by the admin API"})
		case r.Method != http.MethodGet && r.Method != http.MethodHead && !isJSONType(r.Header.Get("Content-Type")):
			writeValue(w, http.StatusUnsupportedMediaType, map[string]string{"error": "state changes need the header Content-Type: application/json (curl -H 'Content-Type: application/json' -X POST ...)"})
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// loopbackHost reports whether a Host header names a loopback address: localhost or a loopback IP, any port.
func loopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// isJSONType reports whether a Content-Type is application/json, parameters aside.
func isJSONType(ct string) bool {
	if ct == "application/json" {
		return true // what nearly every client sends, without parsing it
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// approvePins accepts changed definitions: the body selects them by upstream, kind, name (as the upstream or as
// clients name it) and the hash reviewed ("seen"); {"all": true} accepts every one.
func (a *adminAPI) approvePins(w http.ResponseWriter, r *http.Request) {
	var body struct {
		routing.PinFilter
		All bool `json:"all"`
	}
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	d.DisallowUnknownFields()
	err := d.Decode(&body)
	if err == nil && d.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		writeValue(w, http.StatusBadRequest, map[string]string{"error": `the body must be a JSON object such as {"upstream":"github","name":"create_issue","seen":"sha256:…"}: ` + err.Error()})
		return
	}
	if body.PinFilter == (routing.PinFilter{}) && !body.All {
		writeValue(w, http.StatusBadRequest, map[string]string{"error": `name what to approve (upstream, kind, name, seen), or send {"all": true} to approve every changed definition; GET /admin/pins lists them`})
		return
	}
	res, err := a.op.ApprovePins(r.Context(), body.PinFilter)
	var stale *routing.StaleApprovalError
	switch {
	case errors.Is(err, routing.ErrNoDrift):
		writeValue(w, http.StatusNotFound, map[string]string{"error": err.Error() + "; GET /admin/pins lists the changed definitions"})
	case errors.As(err, &stale):
		writeValue(w, http.StatusConflict, map[string]any{"error": err.Error(), "drift": stale.Drift})
	case errors.As(err, new(*routing.AmbiguousApprovalError)):
		writeValue(w, http.StatusConflict, map[string]string{"error": err.Error()})
	case err != nil:
		writeValue(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error(), "approval": res})
	default:
		writeValue(w, http.StatusOK, res)
	}
}

func (a *adminAPI) result(w http.ResponseWriter, err error) {
	var unknown *routing.UnknownUpstreamError
	switch {
	case errors.As(err, &unknown):
		writeValue(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	case err != nil:
		writeValue(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeValue(w, http.StatusOK, map[string]string{"status": "ok"})
}

func writeValue(w http.ResponseWriter, status int, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	writeJSON(w, status, append(b, '\n'))
}

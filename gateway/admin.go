package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-mcp/switchboard/routing"
)

// Reloader reloads the configuration; cmd supplies it, since the config file is its business.
type Reloader func() (routing.ReloadResult, error)

// AdminHandler serves the admin API: upstream health and counters, restart, drain, and reload. It has no
// authentication of its own, so it must only be served on a separate loopback listener (cmd refuses anything
// else) — or behind the resource server with the admin scope.
func (s *Server) AdminHandler(reload Reloader) http.Handler {
	mux := chi.NewRouter()
	mux.Get("/admin/upstreams", func(w http.ResponseWriter, _ *http.Request) {
		writeValue(w, http.StatusOK, map[string]any{"upstreams": s.r.Status(), "sessions": s.r.SessionCount(), "conflicts": s.r.Conflicts()})
	})
	mux.Post("/admin/upstreams/{name}/restart", func(w http.ResponseWriter, r *http.Request) {
		s.adminResult(w, s.r.RestartUpstream(chi.URLParam(r, "name")))
	})
	mux.Post("/admin/upstreams/{name}/drain", func(w http.ResponseWriter, r *http.Request) {
		s.adminResult(w, s.r.DrainUpstream(chi.URLParam(r, "name"), true))
	})
	mux.Post("/admin/upstreams/{name}/undrain", func(w http.ResponseWriter, r *http.Request) {
		s.adminResult(w, s.r.DrainUpstream(chi.URLParam(r, "name"), false))
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

func (s *Server) adminResult(w http.ResponseWriter, err error) {
	if err != nil {
		writeValue(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	writeValue(w, http.StatusOK, map[string]string{"status": "ok"})
}

func writeValue(w http.ResponseWriter, status int, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	writeJSON(w, status, append(b, '\n'))
}

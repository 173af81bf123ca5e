package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
)

// healthz reports that the process is alive.
func (a *adminAPI) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

// readyz reports whether the gateway is ready for clients: every upstream has been tried once, so the catalog is
// as complete as it can be. An upstream that is down does not make the gateway unready (it is retried and shown
// here); only a gateway still starting up is.
func (a *adminAPI) readyz(w http.ResponseWriter, r *http.Request) {
	body := struct {
		Ready     bool                     `json:"ready"`
		Sessions  int                      `json:"sessions"`
		Upstreams []routing.UpstreamStatus `json:"upstreams"`
		Conflicts []string                 `json:"conflicts,omitempty"`
		// Changed is how many definitions differ from their pins; which ones, only the admin API says: /readyz
		// has no authentication, and a withheld tool may be one a policy hides.
		Changed  int      `json:"definitionsChanged,omitempty"`
		Store    string   `json:"sharedState,omitempty"`
		Warnings []string `json:"warnings,omitempty"`
	}{a.op.Ready(), a.op.SessionCount(), a.op.Status(), a.op.Conflicts(), len(a.op.Drifts()), "", nil}
	for i := range body.Upstreams {
		body.Upstreams[i].Refused = "" // it names a person: the admin API's alone, as /readyz has no authentication
	}
	// Names a stated host would reject break that host's whole session, but not the gateway: a warning, never
	// unreadiness.
	for _, n := range a.op.RejectedNames() {
		body.Warnings = append(body.Warnings, fmt.Sprintf("%s rejects the tool %q: %d characters with its prefix, over its limit of %d; lower maxToolNameLength", n.Host, n.Name, n.Length, n.Limit))
	}
	if a.ready != nil {
		// Without its shared state a replica still serves the sessions it holds, but should get no new ones.
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		if err := a.ready(ctx); err != nil {
			body.Ready, body.Store = false, "unavailable: "+err.Error()
		} else {
			body.Store = "ok"
		}
		cancel()
	}
	b, _ := json.MarshalIndent(body, "", "  ")
	status := http.StatusOK
	if !body.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, append(b, '\n'))
}

package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// TestAdminGuard: a page in an operator's browser must not reach the admin API: not by DNS rebinding (a foreign
// Host), not by a cross-site request (an Origin), not by a simple POST (a form or text/plain body, which needs no
// CORS preflight). The operator's own curl and `switchboard status` get through.
func TestAdminGuard(t *testing.T) {
	markers := markerSink(t)
	r, err := routing.New(routing.Options{Logger: testLogger()}, []routing.UpstreamConfig{stdioUpstream(t, "alpha", routing.Shared, markers)})
	if err != nil {
		t.Fatal(err)
	}
	admin := httptest.NewServer(gateway.New(r, gateway.Options{Logger: testLogger()}).AdminHandler(nil))
	t.Cleanup(admin.Close)
	for _, tc := range []struct {
		name, method, path, host, origin, ctype string
		status                                  int
	}{
		{"operator's GET", http.MethodGet, "/admin/upstreams", "", "", "", http.StatusOK},
		{"GET by localhost name", http.MethodGet, "/admin/upstreams", "localhost:9090", "", "", http.StatusOK},
		{"GET by IPv6 loopback", http.MethodGet, "/admin/upstreams", "[::1]:9090", "", "", http.StatusOK},
		{"operator's drain", http.MethodPost, "/admin/upstreams/alpha/drain", "", "", "application/json", http.StatusOK},
		{"rebinding: foreign Host", http.MethodGet, "/admin/upstreams", "evil.example", "", "", http.StatusForbidden},
		{"rebinding: foreign Host with port", http.MethodPost, "/admin/reload", "evil.example:9090", "", "application/json", http.StatusForbidden},
		{"cross-site GET", http.MethodGet, "/admin/upstreams", "", "https://evil.example", "", http.StatusForbidden},
		{"cross-site drain as text/plain", http.MethodPost, "/admin/upstreams/alpha/drain", "", "https://evil.example", "text/plain", http.StatusForbidden},
		{"same-host Origin", http.MethodPost, "/admin/upstreams/alpha/drain", "", "http://127.0.0.1", "application/json", http.StatusForbidden},
		{"drain as text/plain", http.MethodPost, "/admin/upstreams/alpha/drain", "", "", "text/plain", http.StatusUnsupportedMediaType},
		{"drain as a form", http.MethodPost, "/admin/upstreams/alpha/undrain", "", "", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"reload without a Content-Type", http.MethodPost, "/admin/reload", "", "", "", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctxGuard(t), tc.method, admin.URL+tc.path, strings.NewReader(""))
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("HTTP %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// fakeRevoker records the revocations the admin API asks for.
type fakeRevoker struct {
	mu      sync.Mutex
	revoked []string
	fail    bool
}

func (f *fakeRevoker) Revoke(_ context.Context, principal, upstream string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("the store is down")
	}
	f.revoked = append(f.revoked, upstream+" "+principal)
	return nil
}

func (f *fakeRevoker) RevokeUpstream(_ context.Context, upstream string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, upstream+" *")
	return 3, nil
}

func (f *fakeRevoker) Known(upstream string) bool { return upstream == "github" }

var _ gateway.GrantRevoker = (*fakeRevoker)(nil)

// TestAdminRevokeGrants: POST /admin/grants/revoke revokes one person's grant or a whole upstream's, refuses what
// it cannot understand with 400 and an example, an upstream that is not user-oauth with 404, and reports a store
// failure as 503; without user-oauth upstreams the route says there are none.
func TestAdminRevokeGrants(t *testing.T) {
	r, err := routing.New(routing.Options{Logger: testLogger()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rev := &fakeRevoker{}
	admin := httptest.NewServer(gateway.New(r, gateway.Options{Logger: testLogger(), Grants: rev}).AdminHandler(nil))
	t.Cleanup(admin.Close)
	none := httptest.NewServer(gateway.New(r, gateway.Options{Logger: testLogger()}).AdminHandler(nil))
	t.Cleanup(none.Close)
	post := func(base, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, base+"/admin/grants/revoke", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"one grant", `{"upstream":"github","principal":"https://idp.example|alice"}`, 200, `"revoked": 1`},
		{"a whole upstream", `{"upstream":"github"}`, 200, `"revoked": 3`},
		{"no upstream", `{"principal":"x"}`, 400, `upstream`},
		{"unknown field", `{"upstream":"github","user":"alice"}`, 400, "unknown field"},
		{"two values", `{"upstream":"github"}{}`, 400, "more than one JSON value"},
		{"not user-oauth", `{"upstream":"files"}`, 404, "type: user-oauth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(admin.URL, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("HTTP %d %s, want %d with %s", status, body, tc.status, tc.want)
			}
		})
	}
	if want := []string{"github https://idp.example|alice", "github *"}; strings.Join(rev.revoked, ",") != strings.Join(want, ",") {
		t.Errorf("revoked %v, want %v", rev.revoked, want)
	}
	rev.fail = true
	if status, body := post(admin.URL, `{"upstream":"github","principal":"p"}`); status != 503 || !strings.Contains(body, "store is down") {
		t.Errorf("a failing store: HTTP %d %s", status, body)
	}
	if status, body := post(none.URL, `{"upstream":"github"}`); status != 404 || !strings.Contains(body, "user-oauth") {
		t.Errorf("without user-oauth upstreams: HTTP %d %s", status, body)
	}
}

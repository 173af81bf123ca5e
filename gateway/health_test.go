package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

type readyBody struct {
	Ready     bool                     `json:"ready"`
	Sessions  int                      `json:"sessions"`
	Upstreams []routing.UpstreamStatus `json:"upstreams"`
	Warnings  []string                 `json:"warnings"`
}

func getReadyz(t *testing.T, h *harness) (int, readyBody) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, h.ts.URL+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body readyBody
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("/readyz: %v: %s", err, b)
	}
	return resp.StatusCode, body
}

func deadStdio(t *testing.T, name string) routing.UpstreamConfig {
	t.Helper()
	tr, err := upstream.NewTransport(upstream.Spec{Name: name, Command: "/nonexistent/switchboard-test-no-such-command", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: routing.PerClient, Transport: tr, Kind: "stdio"}
}

func deadHTTP(t *testing.T, name, url string) routing.UpstreamConfig {
	t.Helper()
	tr, err := upstream.NewTransport(upstream.Spec{Name: name, URL: url, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: routing.Shared, Transport: tr, Kind: "http"}
}

// waitReadyOrFail waits for readiness with a shorter guard than guard: readiness here needs no child to start.
func waitReadyOrFail(t *testing.T, h *harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.r.WaitReady(ctx); err != nil {
		_, body := getReadyz(t, h)
		t.Fatalf("the gateway never became ready (%v); /readyz says %+v", err, body)
	}
}

// TestRouterStartupRace: Run publishes each upstream's main link (Upstream.main) without synchronisation while
// the link's own goroutine (started inside newLink, before the assignment) and HTTP handlers (/readyz → Status)
// read it. Under -race this test reports the data race; it starts a few routers whose upstream fails at once and
// asks for /readyz while they start.
func TestRouterStartupRace(t *testing.T) {
	for i := range 5 {
		h := startGatewayNoWait(t, routing.Options{}, gateway.Options{}, deadStdio(t, fmt.Sprintf("dead%d", i)))
		getReadyz(t, h)
	}
}

// TestDownUpstreams: upstreams that are down (a stdio command that does not exist, an HTTP URL where nothing
// listens) do not keep the gateway from becoming ready; /readyz lists them with their error; the healthy
// upstream's tools work; the dead one's names are simply unknown.
func TestDownUpstreams(t *testing.T) {
	alive, _ := httpUpstream(t, "alive", routing.Shared, markerSink(t))
	h := startGatewayNoWait(t, routing.Options{}, gateway.Options{}, alive, deadStdio(t, "nocmd"), deadHTTP(t, "nourl", deadAddress(t)))
	waitReadyOrFail(t, h)
	status, body := getReadyz(t, h)
	if status != http.StatusOK || !body.Ready {
		t.Errorf("/readyz: HTTP %d ready=%v", status, body.Ready)
	}
	byName := map[string]routing.UpstreamStatus{}
	for _, u := range body.Upstreams {
		byName[u.Name] = u
	}
	if u := byName["alive"]; u.State != "ready" || u.Tools != len(upstreamTools) {
		t.Errorf("alive: %+v", u)
	}
	for _, name := range []string{"nocmd", "nourl"} {
		u, ok := byName[name]
		if !ok {
			t.Errorf("/readyz does not list %s: %+v", name, body.Upstreams)
			continue
		}
		if u.State != "down" || u.Error == "" || u.Tools != 0 {
			t.Errorf("%s: want state down with an error and no tools, got %+v", name, u)
		}
	}
	cs := h.connect(t, "client", nil)
	if got := call(t, cs, "alive__echo", map[string]any{"text": "ok"}); got != "ok" {
		t.Errorf("alive__echo answered %q", got)
	}
	for _, name := range []string{"nocmd__echo", "nourl__echo"} {
		_, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil {
			t.Errorf("%s succeeded", name)
			continue
		}
		if we := wireError(t, err); we.Code != -32602 || !strings.Contains(we.Message, name) || !strings.Contains(we.Message, "unknown tool") {
			t.Errorf("%s: %d %q, want -32602 unknown tool naming it", name, we.Code, we.Message)
		}
	}
}

// TestReadyWithOnlyDeadUpstreams: with no healthy upstream at all, the gateway still becomes ready once every
// upstream has been tried ("an upstream that is down does not make the gateway unready").
func TestReadyWithOnlyDeadUpstreams(t *testing.T) {
	h := startGatewayNoWait(t, routing.Options{}, gateway.Options{}, deadStdio(t, "nocmd"), deadHTTP(t, "nourl", deadAddress(t)))
	waitReadyOrFail(t, h)
	if status, body := getReadyz(t, h); status != http.StatusOK {
		t.Errorf("/readyz: HTTP %d: %+v", status, body)
	}
}

// TestReadyWhenAnUpstreamFailsLast: an upstream whose first attempt fails only after the healthy one has been
// listed must still let the gateway become ready (/readyz is 503 until then).
func TestReadyWhenAnUpstreamFailsLast(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	alive, _ := httpUpstream(t, "alive", routing.Shared, markerSink(t))
	h := startGatewayNoWait(t, routing.Options{}, gateway.Options{}, alive, deadHTTP(t, "late", slow.URL))
	waitFor(t, "the healthy upstream to be listed", func() bool {
		for _, u := range h.r.Status() {
			if u.Name == "alive" && u.Tools == len(upstreamTools) {
				return true
			}
		}
		return false
	})
	if status, _ := getReadyz(t, h); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz before every upstream was tried: HTTP %d, want 503", status)
	}
	close(release)
	waitFor(t, "the late upstream to fail", func() bool {
		for _, u := range h.r.Status() {
			if u.Name == "late" && u.State == "down" {
				return true
			}
		}
		return false
	})
	waitReadyOrFail(t, h)
}

// TestReadyzWarnsOfRejectedNames: tool names a stated host would reject are named on /readyz as warnings, without
// making the gateway unready.
func TestReadyzWarnsOfRejectedNames(t *testing.T) {
	h := startGateway(t, routing.Options{Hosts: []routing.HostLimit{{Name: "Strict host", Prefix: "mcp__switchboard-production__", MaxLength: 40}}},
		gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	status, body := getReadyz(t, h)
	if status != http.StatusOK || !body.Ready {
		t.Fatalf("/readyz: HTTP %d ready=%v, want ready despite the warnings", status, body.Ready)
	}
	found := false
	for _, w := range body.Warnings {
		found = found || strings.Contains(w, `Strict host rejects the tool "alpha__progress": 44 characters`)
	}
	if !found {
		t.Errorf("warnings %q do not name alpha__progress", body.Warnings)
	}
}

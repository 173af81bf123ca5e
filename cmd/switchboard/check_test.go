package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// verdicts runs check and serve's start on one config file with the same flags and returns their exit codes
// and what each printed. Serve's start is the real one (start: flags, config, build, the listener bound) with the
// identity provider check uses, which answers the issuer's discovery without a network; a gateway that starts is
// closed before it serves.
func verdicts(t *testing.T, path string, flags ...string) (checkCode, serveCode int, checkOut, serveOut string) {
	t.Helper()
	args := append([]string{"--config", path}, flags...)
	var out, errb bytes.Buffer
	checkCode = run(append([]string{"check"}, args...), &out, &errb)
	var serveErr bytes.Buffer
	g, serveCode := start(t.Context(), args, &serveErr, offlineIdP)
	if g != nil {
		g.close()
	}
	return checkCode, serveCode, out.String() + errb.String(), serveErr.String()
}

// testListen is the --listen a config is tried with: a free port where it listens, on loopback or not as the
// config has it, so that serve's start binds nothing in use and the refusal of a network listen without
// authentication is judged as the file has it.
func testListen(path string) []string {
	cfg, err := config.Load(path)
	if err != nil {
		return nil // refused by both when loaded
	}
	if config.IsLoopback(cfg.Listen) {
		return []string{"--listen", "127.0.0.1:0"}
	}
	return []string{"--listen", "0.0.0.0:0"}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// setConfigEnv sets every variable a config refers to, so that a file is judged on more than an unset secret:
// token keys get a key, anything else a long hex string (a secret, a host name).
func setConfigEnv(t *testing.T, text string) {
	for _, m := range envRef.FindAllStringSubmatch(text, -1) {
		v := strings.Repeat("0123456789abcdef", 4)
		if strings.Contains(m[1], "TOKEN_KEYS") {
			v = "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
		}
		t.Setenv(m[1], v)
	}
}

var yamlBlock = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")

// testConfigs are the config files the project ships and tests with, and every YAML block of the docs that
// configures upstreams, written to files of their own.
func testConfigs(t *testing.T) map[string]string {
	t.Helper()
	root := repoRoot(t)
	files := map[string]string{}
	for _, pattern := range []string{
		"cmd/internal/config/testdata/*.yaml", "deploy/examples/*.json", "deploy/examples/demo.yaml",
		"deploy/compose/switchboard.yaml", "deploy/kustomize/base/config.yaml",
	} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(matches) == 0 {
			t.Fatalf("no config file matches %s", pattern)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			files[rel] = m
		}
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range yamlBlock.FindAllStringSubmatch(string(b), -1) {
			if !strings.HasPrefix(m[1], "upstreams:") && !strings.Contains(m[1], "\nupstreams:") {
				continue
			}
			name := fmt.Sprintf("%s-%d.yaml", strings.TrimSuffix(filepath.Base(d), ".md"), i)
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(m[1]), 0o600); err != nil {
				t.Fatal(err)
			}
			files["docs/"+name] = p
		}
	}
	return files
}

// TestCheckRefusesWhatServeRefuses runs check and serve's start over every config file of the project and of
// its docs, and requires the same verdict: a file serve refuses to start with, check refuses (issue 31, item 11).
func TestCheckRefusesWhatServeRefuses(t *testing.T) {
	files := testConfigs(t)
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			setConfigEnv(t, string(text))
			flags := testListen(path)
			for _, extra := range [][]string{nil, {"--insecure-no-auth"}} {
				c, s, cout, sout := verdicts(t, path, append(flags, extra...)...)
				t.Logf("flags %q: check %d, serve %d", extra, c, s)
				if c != s {
					t.Errorf("flags %q: check exits %d, serve's start %d\ncheck:\n%s\nserve:\n%s", extra, c, s, cout, sout)
				}
			}
		})
	}
}

// TestCheckVerdicts are the cases where check and serve once disagreed, and their neighbours: each must have the
// verdict wanted, from both.
func TestCheckVerdicts(t *testing.T) {
	const keys = "k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	userOAuth := func(publicURL, issuer, upstream, extra string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
publicURL: %s
auth:
  issuer: %s
  browser: {clientId: switchboard-web, clientSecret: web-secret}
  tokenKeys: "%s"
upstreams:
  - name: gh
    url: %s
    auth: {type: user-oauth}
%s`, publicURL, issuer, keys, upstream, extra)
	}
	plain := "listen: %s\nupstreams:\n  - name: echo\n    url: %s\n%s"
	tests := []struct {
		name   string
		config string
		flags  []string
		want   int
		says   string // in check's output when it refuses
	}{
		{name: "user-oauth upstream on plain http off loopback",
			config: userOAuth("https://mcp.example.com", "https://login.example.com", "http://mcp.github.example/mcp", ""),
			want:   exitFailure, says: "upstreams[0].url: is plain http"},
		{name: "user-oauth with a plain http publicURL off loopback",
			config: userOAuth("http://mcp.example.com", "https://login.example.com", "https://mcp.github.example/mcp", ""),
			want:   exitFailure, says: `public URL "http://mcp.example.com" must use https`},
		{name: "user-oauth upstream on plain http on loopback",
			config: userOAuth("https://mcp.example.com", "https://login.example.com", "http://127.0.0.1:9/mcp", ""), want: exitOK},
		{name: "user-oauth upstream on https",
			config: userOAuth("https://mcp.example.com", "https://login.example.com", "https://mcp.github.example/mcp", ""), want: exitOK},
		{name: "user-oauth upstream with a service credential",
			config: userOAuth("https://mcp.example.com", "https://login.example.com", "https://mcp.github.example/mcp",
				"    headers: {Authorization: \"Bearer service\"}\n"), want: exitOK},
		{name: "user-oauth with an issuer ending in a slash",
			config: userOAuth("https://mcp.example.com", "https://login.example.com/realms/eng/", "https://mcp.github.example/mcp", ""), want: exitOK},
		{name: "user-oauth with a loopback http publicURL",
			config: userOAuth("http://127.0.0.1:8080", "http://127.0.0.1:9/realms/eng", "http://127.0.0.1:9/mcp", ""), want: exitOK},
		{name: "no authentication on a network address",
			config: fmt.Sprintf(plain, "0.0.0.0:0", "https://echo.example/mcp", ""), want: exitFailure, says: "without authentication"},
		{name: "no authentication on a network address, --insecure-no-auth",
			config: fmt.Sprintf(plain, "0.0.0.0:0", "https://echo.example/mcp", ""), flags: []string{"--insecure-no-auth"}, want: exitOK},
		{name: "no authentication on a network address by --listen",
			config: fmt.Sprintf(plain, "127.0.0.1:0", "https://echo.example/mcp", ""), flags: []string{"--listen", "0.0.0.0:0"},
			want: exitFailure, says: "without authentication"},
		{name: "--listen not host:port",
			config: fmt.Sprintf(plain, "127.0.0.1:0", "https://echo.example/mcp", ""), flags: []string{"--listen", "8080"}, want: exitUsage},
		{name: "admin API off loopback",
			config: fmt.Sprintf(plain, "127.0.0.1:0", "https://echo.example/mcp", ""), flags: []string{"--admin-listen", "0.0.0.0:0"},
			want: exitUsage},
		{name: "a lock file that does not exist",
			config: fmt.Sprintf(plain, "127.0.0.1:0", "https://echo.example/mcp", "pinning: {lockFile: missing.lock}\n"),
			want:   exitFailure, says: "switchboard pin --config"},
		{name: "headers over plain http off loopback, not user-oauth (a warning)",
			config: fmt.Sprintf(plain, "127.0.0.1:0", "http://echo.example/mcp", "    headers: {X-Api-Key: k}\n"), want: exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchboard.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			c, s, cout, sout := verdicts(t, path, tt.flags...)
			if c != tt.want || s != tt.want {
				t.Fatalf("check exits %d, serve's start %d; want %d\ncheck:\n%s\nserve:\n%s", c, s, tt.want, cout, sout)
			}
			if tt.says != "" && !strings.Contains(cout, tt.says) {
				t.Errorf("check's refusal does not say %q:\n%s", tt.says, cout)
			}
		})
	}
}

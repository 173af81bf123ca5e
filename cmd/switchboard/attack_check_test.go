package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttacksCheck: `switchboard check` said valid for files `serve` refused to start with (issue 31, item 11), so
// a pipeline that checks before it deploys let them through. Through the real binary, both commands on each file,
// with the same flags: check must refuse what serve refuses, saying why.
func TestAttacksCheck(t *testing.T) {
	bin := buildSwitchboard(t)
	tmp := t.TempDir()
	const keys = "k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	tests := []struct {
		name, config string
		flags        []string
		says         string
	}{
		{name: "user-oauth upstream on plain http off loopback", says: "upstreams[0].url: is plain http",
			config: fmt.Sprintf(`listen: 127.0.0.1:0
publicURL: https://mcp.example.com
auth:
  issuer: https://login.example.com
  browser: {clientId: switchboard-web, clientSecret: web-secret}
  tokenKeys: %q
upstreams:
  - name: gh
    url: http://mcp.github.example/mcp
    auth: {type: user-oauth}
`, keys)},
		{name: "no authentication on a network address", says: "without authentication",
			config: "listen: 0.0.0.0:0\nupstreams:\n  - {name: echo, url: https://echo.example/mcp}\n"},
		{name: "no authentication on a network address given by --listen", says: "without authentication",
			flags:  []string{"--listen", "0.0.0.0:0"},
			config: "listen: 127.0.0.1:0\nupstreams:\n  - {name: echo, url: https://echo.example/mcp}\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(tmp, fmt.Sprintf("c%d.yaml", i))
			writeAtomic(t, path, tt.config)
			args := append([]string{"--config", path}, tt.flags...)
			code, out, errOut := runBin(t, bin, append([]string{"check"}, args...)...)
			if code != exitFailure || !strings.Contains(errOut, tt.says) {
				t.Errorf("check: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", code, exitFailure, tt.says, out, errOut)
			}
			// serve refuses before it serves; a serve that starts is stopped by runBin's guard, and fails the case.
			code, _, errOut = runBin(t, bin, append([]string{"serve"}, args...)...)
			if code != exitFailure || !strings.Contains(errOut, tt.says) {
				t.Errorf("serve: exit %d, want %d saying %q\nstderr: %s", code, exitFailure, tt.says, errOut)
			}
		})
	}
}

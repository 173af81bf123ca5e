package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// gateway is a running `switchboard serve`, its log going to the harness's stderr (which the conformance CLI
// keeps as the scenario's stderr.txt).
type gateway struct {
	cmd  *exec.Cmd
	done chan error
	base string // http://host:port
}

// freeAddr is a loopback host:port that was free a moment ago (the gateway's listen address must be known before
// it starts, for publicURL).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startGateway writes config into dir and runs bin serve with it, with env added to the harness's environment,
// until /readyz answers 200 or ready passes.
func startGateway(ctx context.Context, bin, dir, listen, config string, env []string, logTo io.Writer, ready time.Duration) (*gateway, error) {
	path := filepath.Join(dir, "switchboard.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logTo, logTo
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	g := &gateway{cmd: cmd, done: make(chan error, 1), base: "http://" + listen}
	go func() { g.done <- cmd.Wait() }()
	if err := g.waitReady(ctx, ready); err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// waitReady polls /readyz: the gateway has no other way to say it is ready.
func (g *gateway) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-g.done:
			g.done <- err
			return fmt.Errorf("the gateway exited before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("the gateway was not ready (GET /readyz != 200) within %s", within)
		case <-tick.C:
		}
	}
}

// stop ends the gateway: SIGTERM, then SIGKILL after 5 s.
func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-g.done:
		g.done <- err
	case <-time.After(5 * time.Second):
		_ = g.cmd.Process.Kill()
		g.done <- <-g.done
	}
}

var resourceMetadataRe = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// tokenEndpoint finds the upstream's token endpoint the way an operator would before writing tokenURL into
// auth.clientCredentials (which has no discovery of its own): from the upstream's 401 challenge, its protected
// resource metadata and its authorization server's metadata. It is configuration, done once before the gateway
// starts; the gateway alone asks for and uses the token.
func tokenEndpoint(ctx context.Context, upstream string) (string, error) {
	as, err := authorizationServer(ctx, upstream)
	return as.TokenEndpoint, err
}

// asMetadata is what the harness reads of an authorization server's metadata.
type asMetadata struct {
	Issuer        string `json:"issuer"`
	TokenEndpoint string `json:"token_endpoint"`
}

// authorizationServer reads the upstream's authorization server's metadata, as tokenEndpoint says.
func authorizationServer(ctx context.Context, upstream string) (asMetadata, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, upstream,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return asMetadata{}, fmt.Errorf("probe %s: %w", upstream, err)
	}
	resp.Body.Close()
	prm := ""
	if m := resourceMetadataRe.FindStringSubmatch(resp.Header.Get("WWW-Authenticate")); m != nil {
		prm = m[1]
	} else {
		u, err := url.Parse(upstream)
		if err != nil {
			return asMetadata{}, fmt.Errorf("upstream url: %w", err)
		}
		prm = u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + u.Path
	}
	var pr struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := getJSON(ctx, prm, &pr); err != nil {
		return asMetadata{}, err
	}
	if len(pr.AuthorizationServers) == 0 {
		return asMetadata{}, errors.New("the protected resource metadata names no authorization server")
	}
	as, err := url.Parse(pr.AuthorizationServers[0])
	if err != nil {
		return asMetadata{}, fmt.Errorf("authorization server: %w", err)
	}
	var meta asMetadata
	wellKnown := as.Scheme + "://" + as.Host + "/.well-known/oauth-authorization-server" + strings.TrimSuffix(as.Path, "/")
	if err := getJSON(ctx, wellKnown, &meta); err != nil {
		return asMetadata{}, err
	}
	if meta.TokenEndpoint == "" {
		return asMetadata{}, errors.New("the authorization server metadata has no token_endpoint")
	}
	return meta, nil
}

func getJSON(ctx context.Context, u string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// Command conformanceclient runs one client scenario of the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12, `conformance client --command ... --scenario NAME`)
// through Switchboard: the gateway is the client under test, the harness only starts it and is its client.
//
// The CLI starts the scenario's server (and authorization server), appends its URL to the command, and sets
// MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION and, where the scenario hands the client
// credentials, MCP_CONFORMANCE_CONTEXT. The harness then
//
//  1. writes a gateway config with that URL as the one upstream (prefix "", so the scenario's tool names stay),
//     with the credential the scenario calls for (plan.go): none; a person's own grant (type: user-oauth, with
//     the context's pre-registered client when there is one, else whatever the gateway finds: metadata
//     document or dynamic registration); the gateway's own client credentials (with a secret, or private_key_jwt
//     with the context's key in a file); type: id-jag for the one person
//     whose ID token the scenario hands over (written to a file, as a desktop SSO helper would); type:
//     workload-identity with the scenario's workload token in a file, as Kubernetes projects one;
//  2. for user-oauth, serves the gateway's identity provider (idp.go), which signs one person in;
//  3. runs `switchboard serve` (SWITCHBOARD_BIN, else switchboard on PATH) and waits for /readyz;
//  4. connects to the gateway's /mcp with the official Go SDK in the scenario's era and makes the scenario's
//     calls (drive.go), following a connect link like a person when the gateway asks for one.
//
// It never touches an upstream token and retries nothing on the gateway's behalf: it starts, calls and clicks.
// What the gateway sends upstream is what the scenario scores. Exit status 1 when the traffic failed; the
// gateway's log is on stderr.
//
// Usage: conformanceclient [flags] SCENARIO_URL
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 25*time.Second, "give up after this long (keep it under the CLI's --timeout)")
	flag.Parse()
	l := log.New(os.Stderr, "conformanceclient: ", log.Lmicroseconds)
	if flag.NArg() < 1 {
		l.Fatal("usage: conformanceclient [-timeout D] SCENARIO_URL (with MCP_CONFORMANCE_SCENARIO set)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := run(ctx, l, flag.Arg(flag.NArg()-1)); err != nil {
		l.Printf("FAILED: %v", err)
		os.Exit(1)
	}
	l.Print("done")
}

func run(ctx context.Context, l *log.Logger, upstream string) error {
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if scenario == "" {
		return errors.New("MCP_CONFORMANCE_SCENARIO is not set")
	}
	version := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")
	sc, err := parseContext(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	p := planFor(scenario, sc)
	l.Printf("scenario %s, protocol %s, upstream %s, auth %v", scenario, version, upstream, p.auth)
	if p.auth == authUnsupported {
		return fmt.Errorf("the gateway cannot be configured for %s: %s", scenario, p.unsupported)
	}
	bin, err := switchboardBinary()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "conformanceclient-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	listen, err := freeAddr()
	if err != nil {
		return err
	}
	setup := gatewaySetup{listen: listen, upstreamURL: upstream}
	c := &client{scenario: scenario, version: version, ctx: sc, mcpURL: "http://" + listen + gatewayMCPPath,
		http: &http.Client{}, log: l, listChanged: make(chan struct{}, 1)}
	switch p.auth {
	case authUserOAuth:
		provider, err := startIDP()
		if err != nil {
			return err
		}
		defer provider.Close()
		setup.issuer, setup.browserSecret, setup.tokenKeys = provider.issuer, provider.secret, newTokenKeys()
		token, err := provider.accessToken(c.mcpURL)
		if err != nil {
			return err
		}
		c.http = &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
		if c.person, err = newPerson(l); err != nil {
			return err
		}
	case authClientCredentials:
		as, err := authorizationServer(ctx, upstream)
		if err != nil {
			return fmt.Errorf("finding the token URL to configure: %w", err)
		}
		setup.tokenURL, setup.asIssuer = as.TokenEndpoint, as.Issuer
		if p.privateKey != "" {
			// The client's key, as an operator would keep it in a mounted secret.
			setup.keyFile = filepath.Join(dir, "client_key.pem")
			if err := os.WriteFile(setup.keyFile, []byte(p.privateKey), 0o600); err != nil {
				return err
			}
		}
	case authIDJAG:
		as, err := authorizationServer(ctx, upstream)
		if err != nil {
			return fmt.Errorf("finding the authorization server to configure: %w", err)
		}
		setup.asIssuer, setup.tokenURL = as.Issuer, as.TokenEndpoint
		// The person's ID token, as their SSO helper would leave it for a desktop gateway; the harness never
		// reads the ID-JAG or the access token.
		setup.idTokenFile = filepath.Join(dir, "id_token")
		if err := os.WriteFile(setup.idTokenFile, []byte(p.idToken), 0o600); err != nil {
			return err
		}
	case authWorkload:
		if setup.tokenURL, err = tokenEndpoint(ctx, upstream); err != nil {
			return fmt.Errorf("finding the token URL to configure: %w", err)
		}
		// Where Kubernetes would project the service-account token.
		setup.idTokenFile = filepath.Join(dir, "workload_token")
		if err := os.WriteFile(setup.idTokenFile, []byte(p.idToken), 0o600); err != nil {
			return err
		}
	}
	config, env, err := p.config(setup)
	if err != nil {
		return err
	}
	l.Printf("gateway config:\n%s", config)
	gw, err := startGateway(ctx, bin, dir, listen, config, env, prefixWriter{l}, 15*time.Second)
	if err != nil {
		return err
	}
	defer gw.stop()
	return c.run(ctx)
}

// switchboardBinary is SWITCHBOARD_BIN, else switchboard on PATH.
func switchboardBinary() (string, error) {
	if bin := os.Getenv("SWITCHBOARD_BIN"); bin != "" {
		return bin, nil
	}
	bin, err := exec.LookPath("switchboard")
	if err != nil {
		return "", fmt.Errorf("no SWITCHBOARD_BIN and no switchboard on PATH: %w", err)
	}
	return bin, nil
}

// newTokenKeys is an auth.tokenKeys value with one fresh key.
func newTokenKeys() string {
	key := make([]byte, 32)
	rand.Read(key) //nolint:errcheck // crypto/rand.Read never fails
	return "k1:" + base64.StdEncoding.EncodeToString(key)
}

// bearer adds the client's token to every request to the gateway.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// prefixWriter puts the gateway's log lines into the harness's log.
type prefixWriter struct{ l *log.Logger }

func (w prefixWriter) Write(b []byte) (int, error) {
	w.l.Printf("gateway: %s", b)
	return len(b), nil
}

func (a upstreamAuth) String() string {
	switch a {
	case authNone:
		return "none"
	case authUserOAuth:
		return "user-oauth"
	case authClientCredentials:
		return "client-credentials"
	case authIDJAG:
		return "id-jag"
	case authWorkload:
		return "workload-identity"
	default:
		return "unsupported"
	}
}

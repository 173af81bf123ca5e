package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// check validates a config file as serve would start with it: it loads the file, then builds the gateway with
// serve's own build (f.checkOnly), so that every refusal of serve's start is check's too; only the listeners and
// the identity provider's discovery are left out, as check starts and contacts nothing. It takes serve's command
// line: --listen, --insecure-no-auth and --admin-listen decide whether serve starts.
func check(args []string, stdout, stderr io.Writer) int {
	f, code := parseServeFlags("check", args, stderr)
	if code != exitOK {
		return code
	}
	cfg, code := loadConfig(f.path, stderr)
	if cfg == nil {
		return code
	}
	f.checkOnly = true
	g, err := build(context.Background(), cfg, f, slog.New(slog.DiscardHandler), new(slog.LevelVar))
	if err != nil {
		fmt.Fprintf(stderr, "%s is invalid: %v\n", f.path, err)
		return exitFailure
	}
	g.close()
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "%s is valid: %s\n%s", f.path, cfg.Summary(), cfg.String())
	return exitOK
}

// errOffline is what check's identity provider answers for anything but the issuer's discovery.
var errOffline = errors.New("switchboard check contacts no server")

// offlineIdP is the identity provider check builds the gateway with: it answers the configured issuer's discovery
// (OpenID Connect, and RFC 8414's path) with a document that names the issuer and endpoints under it, and refuses
// every other request. The config is checked as serve checks it; whether the provider answers, and with what, is
// the running gateway's concern (it does not start without its sign-in's discovery; /readyz reports the rest).
func offlineIdP(cfg *config.Config) *http.Client {
	issuer := ""
	if cfg.Auth != nil {
		issuer = cfg.Auth.Issuer
	}
	return &http.Client{Transport: offlineIssuer(issuer)}
}

type offlineIssuer string

// RoundTrip implements http.RoundTripper.
func (iss offlineIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	issuer := string(iss)
	base := strings.TrimSuffix(issuer, "/")
	oidc := base + "/.well-known/openid-configuration"
	rfc8414 := ""
	if scheme, rest, ok := strings.Cut(base, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		rfc8414 = scheme + "://" + host + "/.well-known/oauth-authorization-server"
		if path != "" {
			rfc8414 += "/" + path
		}
	}
	if r.Body != nil {
		_ = r.Body.Close()
	}
	if issuer == "" || r.Method != http.MethodGet || (r.URL.String() != oidc && r.URL.String() != rfc8414) {
		return nil, errOffline
	}
	doc, err := json.Marshal(map[string]any{
		"issuer": issuer, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
		"jwks_uri": base + "/jwks", "token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(doc)),
		ContentLength: int64(len(doc)), Request: r,
	}, nil
}

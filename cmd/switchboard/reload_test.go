package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// TestReloadLevelAndLimits: a reload applies the log level and the rate limits to the running gateway; the log
// format still needs a restart, and the reload says so.
func TestReloadLevelAndLimits(t *testing.T) {
	url := threeToolUpstream(t)
	base := "upstreams:\n  - {name: up, url: " + url + "}\nlisten: 127.0.0.1:0\n"
	path := writeConfig(t, base+"log: {level: info}\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log, level := newLogger(cfg.Log, &logs)
	g, err := build(context.Background(), cfg, serveFlags{path: path}, log, level)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.router.Run(ctx) }() // as run does: initialize waits for the first catalog
	defer func() { cancel(); <-done }()
	initialize := func() int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Host = "127.0.0.1" // the gateway answers loopback hosts only (DNS rebinding)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		g.srv.Handler().ServeHTTP(w, req)
		return w.Code
	}
	for range 5 {
		if code := initialize(); code != http.StatusOK {
			t.Fatalf("initialize answered %d before any rateLimit was configured", code)
		}
	}
	if err := os.WriteFile(path, []byte(base+"log: {level: debug, format: json}\nrateLimit: {requestsPerSecond: 1, burst: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := g.reload()
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if !slices.Equal(res.RestartNeeded, []string{"log.format"}) {
		t.Errorf("the reload's answer names %v as needing a restart, want [log.format]", res.RestartNeeded)
	}
	if level.Level() != slog.LevelDebug {
		t.Errorf("log level after the reload: %v, want debug", level.Level())
	}
	limited := false
	for range 3 {
		limited = limited || initialize() == http.StatusTooManyRequests
	}
	if !limited {
		t.Errorf("three requests at once passed a limit of 1 per second with a burst of 1; logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "log.format") {
		t.Errorf("the reload did not name log.format as needing a restart; logs:\n%s", logs.String())
	}
}

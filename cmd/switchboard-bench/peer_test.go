package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestStatelessSession: against a server that assigns no session id (the peer's stateless streamable HTTP), the
// load client opens its "session", sends the protocol version initialize agreed on every later request and no
// session header; an initialize answer without a protocol version is an error.
func TestStatelessSession(t *testing.T) {
	tests := []struct {
		name, initResult string
		wantErr          string
		wantVersion      string
	}{
		{"agreed older version", `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`, "", "2025-06-18"},
		{"agreed ours", `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`, "", "2025-11-25"},
		{"no version", `{"capabilities":{}}`, "no protocolVersion", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []http.Header // of every request after initialize
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				body := string(b)
				switch {
				case strings.Contains(body, `"method":"initialize"`):
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + tt.initResult + `}`))
					return
				case strings.Contains(body, `"method":"notifications/initialized"`):
					mu.Lock()
					seen = append(seen, r.Header.Clone())
					mu.Unlock()
					w.WriteHeader(http.StatusAccepted)
				default:
					mu.Lock()
					seen = append(seen, r.Header.Clone())
					mu.Unlock()
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`))
				}
			}))
			defer srv.Close()
			hc := newHTTPClient()
			defer hc.CloseIdleConnections()
			c := &mcpClient{hc: hc, url: srv.URL}
			err := c.initialize()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("initialize: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if err := c.callTool(`{"name":"echo","arguments":{}}`); err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			c.close() // no session: no DELETE
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Fatalf("the server saw %d requests after initialize, want 2 (notifications/initialized, tools/call)", len(seen))
			}
			for i, h := range seen {
				if got := h.Get("Mcp-Protocol-Version"); got != tt.wantVersion {
					t.Errorf("request %d: MCP-Protocol-Version %q, want %q", i, got, tt.wantVersion)
				}
				if sid, ok := h["Mcp-Session-Id"]; ok {
					t.Errorf("request %d carried Mcp-Session-Id %q from a server that assigned none", i, sid)
				}
			}
		})
	}
}

// TestBuildPeerSpec: -mcp-proxy's value is a binary when it names a file, and module@version otherwise; anything
// else is refused before the go command runs.
func TestBuildPeerSpec(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "my-mcp-proxy")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := buildPeer(dir, bin)
	if err != nil || got.path != bin || got.label != "mcp-proxy (my-mcp-proxy)" {
		t.Errorf("buildPeer(a file) = %+v, %v; want the file itself", got, err)
	}
	for _, spec := range []string{"github.com/TBXark/mcp-proxy", "@v0.43.2", "github.com/TBXark/mcp-proxy@", dir} {
		if _, err := buildPeer(dir, spec); err == nil || !strings.Contains(err.Error(), "neither a file nor module@version") {
			t.Errorf("buildPeer(%q): %v, want it refused as neither a file nor module@version", spec, err)
		}
	}
}

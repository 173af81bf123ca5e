package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// TestServerCardWiring: the serverCard: block reaches the front end. With it, the gateway's card and each
// endpoint's are served, named from publicURL's host, their remotes on publicURL, listing the tools (no auth);
// without it, the card's path is 404; and a reload that changes the block says it needs a restart.
func TestServerCardWiring(t *testing.T) {
	url := threeToolUpstream(t)
	base := "upstreams:\n  - {name: up, url: " + url + "}\nlisten: 127.0.0.1:0\npublicURL: http://127.0.0.1:8080\n" +
		"endpoints:\n  - {name: safe, include: [up__echo]}\n"
	for _, tc := range []struct {
		name, extra string
		card        bool
	}{
		{"on", "serverCard: {primitives: true}\n", true},
		{"off", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, base+tc.extra)
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			log, level := newLogger(cfg.Log, io.Discard)
			g, err := build(context.Background(), cfg, serveFlags{path: path}, log, level)
			if err != nil {
				t.Fatal(err)
			}
			defer g.close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); g.router.Run(ctx) }()
			defer func() { cancel(); <-done }()
			get := func(p string) (int, []byte) {
				req := httptest.NewRequest(http.MethodGet, p, nil)
				req.Host = "127.0.0.1:8080"
				w := httptest.NewRecorder()
				g.srv.Handler().ServeHTTP(w, req)
				return w.Code, w.Body.Bytes()
			}
			code, body := get("/.well-known/mcp/server-card")
			if !tc.card {
				if code != http.StatusNotFound {
					t.Fatalf("without serverCard the card answered %d: %s", code, body)
				}
				return
			}
			for _, c := range []struct {
				path, name, url string
				tools           []string
			}{
				{"/.well-known/mcp/server-card", "localhost/switchboard", "http://127.0.0.1:8080/mcp", []string{"up__delete_all", "up__echo", "up__shout"}},
				{"/.well-known/mcp/server-card/safe", "localhost/switchboard-safe", "http://127.0.0.1:8080/mcp/safe", []string{"up__echo"}},
			} {
				code, body := get(c.path)
				var card struct {
					Name    string
					Remotes []struct{ URL string }
					Tools   []struct{ Name string }
				}
				if code != http.StatusOK || json.Unmarshal(body, &card) != nil {
					t.Fatalf("GET %s: %d %s", c.path, code, body)
				}
				var tools []string
				for _, tl := range card.Tools {
					tools = append(tools, tl.Name)
				}
				slices.Sort(tools)
				if card.Name != c.name || len(card.Remotes) == 0 || card.Remotes[0].URL != c.url || !slices.Equal(tools, c.tools) {
					t.Errorf("GET %s: name %q, remotes %v, tools %v; want %q, %q, %v", c.path, card.Name, card.Remotes, tools, c.name, c.url, c.tools)
				}
			}
			if err := os.WriteFile(path, []byte(base), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := g.reload()
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			if !slices.Contains(res.RestartNeeded, "serverCard") {
				t.Errorf("a reload without serverCard names %v as needing a restart, want serverCard among them", res.RestartNeeded)
			}
		})
	}
}

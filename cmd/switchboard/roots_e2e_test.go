//lint:file-ignore SA1019 roots are deprecated in 2026-07-28, but legacy clients declare them and servers such as server-filesystem work in them; that is what this test exercises.

package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2EFirstCallRoots (issue 31, item 8): server-filesystem per client, started without directories of its
// own, works only in the roots its client gives it, and applies them asynchronously once it has the answer. A
// client that declares roots and calls read_text_file in one of them as soon as it is initialized gets the file
// on its very first call, for each of 10 sessions in a row: the gateway starts the client's own filesystem
// session when the client is initialized (the catalog's session asked for roots, so this one will), and holds
// the first call until its roots are in.
func TestE2EFirstCallRoots(t *testing.T) {
	fsJS := filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(fsJS); err != nil {
		e2eGate(t)("Node peer %s not installed: run .ci/setup", fsJS)
	}
	node, _, _ := e2ePeers(t)
	gw := startE2EGateway(t, "switchboard-roots", `listen: %[1]s
log:
  level: debug
upstreams:
  - name: fs
    command: %[2]s
    args: [%[3]s]
    session: per-client
`, strconv.Quote(node), strconv.Quote(fsJS))

	const sessions = 10
	var denied []string
	for i := range sessions {
		dir := t.TempDir()
		want := fmt.Sprintf("the file of session %d", i)
		file := filepath.Join(dir, "note.txt")
		if err := os.WriteFile(file, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a failure guard
		c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("roots-%d", i), Version: "1"}, nil)
		c.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: dir}).String(), Name: "work"})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.base + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			cancel()
			t.Fatalf("session %d: connect: %v\n--- gateway log (tail):\n%s", i, err, gw.js.gw.log.tail(40))
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": file}})
		var got strings.Builder
		if err == nil {
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					got.WriteString(tc.Text)
				}
			}
		}
		switch {
		case err != nil:
			denied = append(denied, fmt.Sprintf("session %d: %v", i, err))
		case res.IsError || !strings.Contains(got.String(), want):
			denied = append(denied, fmt.Sprintf("session %d: %q", i, got.String()))
		}
		_ = cs.Close()
		cancel()
	}
	if len(denied) > 0 {
		t.Errorf("%d of %d first calls failed:\n%s\n--- gateway log (tail):\n%s", len(denied), sessions, strings.Join(denied, "\n"), gw.js.gw.log.tail(40))
	}
}

//lint:file-ignore SA1019 roots and sampling are deprecated in 2026-07-28, but server-everything lists the tools that use them only to a client that declares them, and this test asks for every pinned tool.

package main

// TestTeamExample (issue 36, item 3): deploy/examples/team.yaml does what its comments and the README say, with
// the real servers it names (from node_modules instead of npx): its lock file is what `switchboard pin` writes for
// those pinned versions, so nothing is withheld; /mcp/notes lists what it selects, with list_shared's preset
// hidden and enforced; /mcp/agent is in search mode and its search finds and runs a tool.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// npxServer matches an upstream of the example started by npx from a pinned npm package.
var npxServer = regexp.MustCompile(`command: npx\n(\s+)args: \["-y", "@modelcontextprotocol/(server-[a-z]+)@[0-9.]+"`)

func TestTeamExample(t *testing.T) {
	missing := e2eGate(t)
	root := repoRoot(t)
	node, _, _ := nodePeers(t, root, missing)
	src, err := os.ReadFile(filepath.Join(root, "deploy", "examples", "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(npxServer.FindAllIndex(src, -1)); n != 3 {
		t.Fatalf("team.yaml: %d upstreams started by npx from a pinned package, want 3", n)
	}
	nm := filepath.Join(root, "node_modules", "@modelcontextprotocol")
	cfg := npxServer.ReplaceAllString(string(src), fmt.Sprintf("command: %s\n${1}args: [%q", node, nm+"/${2}/dist/index.js"))
	cfg = strings.Replace(cfg, "listen: 127.0.0.1:8080", fmt.Sprintf("listen: 127.0.0.1:%d", freePort(t)), 1)
	shared := t.TempDir()
	t.Setenv("TMPDIR", shared)
	if err := os.WriteFile(filepath.Join(shared, "notes.txt"), []byte("team notes"), 0o644); err != nil {
		t.Fatal(err)
	}

	bin := buildBinary(t, t.TempDir())
	// The shipped lock is what pin writes for these versions.
	pinDir := t.TempDir()
	writeAtomic(t, filepath.Join(pinDir, "team.yaml"), cfg)
	if code, out, errOut := runBin(t, bin, "pin", "--config", filepath.Join(pinDir, "team.yaml")); code != 0 {
		t.Fatalf("switchboard pin: exit %d\n%s%s", code, out, errOut)
	}
	fresh, err := os.ReadFile(filepath.Join(pinDir, "team.lock"))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(root, "deploy", "examples", "team.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, shipped) {
		t.Fatalf("deploy/examples/team.lock is not what `switchboard pin --config deploy/examples/team.yaml` writes for its pinned versions; write it anew:\n%s", fresh)
	}

	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "team.yaml"), cfg)
	writeAtomic(t, filepath.Join(dir, "team.lock"), string(shipped))
	if code, out, errOut := runBin(t, bin, "check", "--config", filepath.Join(dir, "team.yaml")); code != 0 {
		t.Fatalf("switchboard check: exit %d\n%s%s", code, out, errOut)
	}
	listen := regexp.MustCompile(`listen: (\S+)`).FindStringSubmatch(cfg)[1]
	p := startProcess(t, "switchboard", dir, nil, bin, "serve", "--config", filepath.Join(dir, "team.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*opsWait)
	defer cancel()
	base := "http://" + listen
	if err := waitReady(ctx, base+"/readyz", opsWait, p); err != nil {
		t.Fatalf("%v\n%s", err, p.log.tail(40))
	}
	connect := func(endpoint string) *mcp.ClientSession {
		// A client with roots, sampling and elicitation, so that server-everything lists the tools that need them.
		c := mcp.NewClient(&mcp.Implementation{Name: "team-example", Version: "1.0.0"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "none", Role: "assistant", Content: &mcp.TextContent{Text: "none"}}, nil
			},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
			Capabilities: &mcp.ClientCapabilities{
				RootsV2:     &mcp.RootCapabilities{},
				Sampling:    &mcp.SamplingCapabilities{},
				Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			},
		})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + endpoint, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	toolsOf := func(cs *mcp.ClientSession) map[string]*mcp.Tool {
		out := map[string]*mcp.Tool{}
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out[tool.Name] = tool
		}
		return out
	}
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	// The whole catalog: every pinned tool is served (none withheld), list_shared in place of list_directory.
	whole := toolsOf(connect("/mcp"))
	var lock struct {
		Upstreams map[string]struct{ Tools map[string]string } `json:"upstreams"`
	}
	if err := json.Unmarshal(shipped, &lock); err != nil {
		t.Fatal(err)
	}
	for up, l := range lock.Upstreams {
		for name := range l.Tools {
			exposed := up + "__" + name
			if up == "files" && name == "list_directory" {
				exposed = "list_shared"
			}
			if whole[exposed] == nil {
				t.Errorf("/mcp does not serve %s: withheld?", exposed)
			}
		}
	}

	// notes: what its include selects, and the preset.
	notesSession := connect("/mcp/notes")
	notes := toolsOf(notesSession)
	for name := range notes {
		if !strings.HasPrefix(name, "memory__") && !strings.HasPrefix(name, "files__read_") && name != "files__search_files" && name != "list_shared" {
			t.Errorf("/mcp/notes lists %s, which its include does not select", name)
		}
	}
	for _, want := range []string{"memory__create_entities", "files__read_text_file", "files__search_files", "list_shared"} {
		if notes[want] == nil {
			t.Errorf("/mcp/notes does not list %s", want)
		}
	}
	if ls := notes["list_shared"]; ls != nil {
		if schema, _ := json.Marshal(ls.InputSchema); strings.Contains(string(schema), `"path"`) {
			t.Errorf("list_shared's schema shows the preset path: %s", schema)
		}
	}
	res, err := notesSession.CallTool(ctx, &mcp.CallToolParams{Name: "list_shared", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(text(res), "notes.txt") {
		t.Errorf("list_shared: %v %+v", err, res)
	}
	if _, err := notesSession.CallTool(ctx, &mcp.CallToolParams{Name: "list_shared", Arguments: map[string]any{"path": "/"}}); err == nil || !strings.Contains(err.Error(), "path") {
		t.Errorf("list_shared with the preset sent: %v, want -32602 naming path", err)
	}

	// agent: search mode.
	agentSession := connect("/mcp/agent")
	agent := toolsOf(agentSession)
	var names []string
	for name := range agent {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"call_tool", "memory__read_graph", "search_tools"}) {
		t.Errorf("/mcp/agent lists %v", names)
	}
	res, err = agentSession.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "add two numbers", "limit": 5}})
	if err != nil || res.IsError || !strings.Contains(text(res), "everything__get-sum") {
		t.Fatalf("search_tools: %v %s", err, text(res))
	}
	res, err = agentSession.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "everything__get-sum", "arguments": map[string]any{"a": 2, "b": 3}}})
	if err != nil || res.IsError || !strings.Contains(text(res), "5") {
		t.Errorf("call_tool everything__get-sum: %v %s", err, text(res))
	}

	// The console is on: its catalog shows where list_shared comes from and its preset, and runs the search.
	for path, want := range map[string][]string{
		"/console/catalog?endpoint=/mcp/notes":                   {"list_shared", "files/list_directory (renamed; described; preset path)"},
		"/console/catalog?endpoint=/mcp/agent&q=add+two+numbers": {"everything__get-sum"},
	} {
		code, body := adminDo(t, http.MethodGet, base+path)
		for _, w := range want {
			if code != http.StatusOK || !strings.Contains(body, w) {
				t.Errorf("GET %s: HTTP %d, without %q", path, code, w)
			}
		}
	}
}

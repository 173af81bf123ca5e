package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// threeToolUpstream serves a Go SDK server with three tools over streamable HTTP.
func threeToolUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	type in struct {
		Text  string `json:"text,omitempty"`
		Owner string `json:"owner,omitempty"`
	}
	for _, name := range []string{"echo", "shout", "delete_all"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: name}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Owner + ":" + a.Text}}}, nil, nil
		})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStdioEndpoint: `switchboard stdio --endpoint NAME` serves the endpoint's part of the catalog, with the
// overrides applied; an unknown endpoint is a usage error; a pinning block is checked, and a missing lock file named.
func TestStdioEndpoint(t *testing.T) {
	url := threeToolUpstream(t)
	cfg := writeConfig(t, `upstreams:
  - {name: up, url: `+url+`}
endpoints:
  - name: team
    include: ["up__*", "loud"]
    exclude: ["up__delete_*"]
overrides:
  up/shout: {name: loud, description: Shout it, arguments: {owner: acme}}
`)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"loud","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"loud","arguments":{"text":"hi","owner":"evil"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"up__delete_all","arguments":{}}}`,
	}, "\n") + "\n"
	// stdin stays open until every answer is out: stdin's end is how a stdio client stops its server.
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	answers := map[string]json.RawMessage{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage
				Result json.RawMessage
				Error  json.RawMessage
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
				answers[string(m.ID)] = append(m.Result, m.Error...)
			}
			if len(answers) == 5 {
				stdinW.Close()
			}
		}
	}()
	go func() { _, _ = io.WriteString(stdinW, in) }()
	var errb bytes.Buffer
	code := stdio([]string{"--config", cfg, "--endpoint", "team"}, stdinR, stdoutW, &errb)
	stdoutW.Close()
	<-read
	if code != exitOK {
		t.Fatalf("stdio exited %d: %s", code, errb.String())
	}
	var list struct {
		Tools []struct{ Name, Description string }
	}
	_ = json.Unmarshal(answers["2"], &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"loud", "up__echo"}) {
		t.Errorf("the endpoint lists %v, want [loud up__echo]", names)
	}
	if !strings.Contains(string(answers["3"]), `acme:hi`) {
		t.Errorf("the renamed tool with its preset answered %s", answers["3"])
	}
	if !strings.Contains(string(answers["4"]), `-32602`) || !strings.Contains(string(answers["4"]), "owner") {
		t.Errorf("sending the preset answered %s, want -32602 naming owner", answers["4"])
	}
	if !strings.Contains(string(answers["5"]), "unknown tool") {
		t.Errorf("a tool outside the endpoint answered %s", answers["5"])
	}

	var out bytes.Buffer
	errb.Reset()
	if code := stdio([]string{"--config", cfg, "--endpoint", "nope"}, strings.NewReader(""), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `"nope"`) {
		t.Errorf("an unknown endpoint: exit %d, %q", code, errb.String())
	}
	pinned := writeConfig(t, "upstreams:\n  - {name: up, url: "+url+"}\npinning: {onChange: block}\n")
	errb.Reset()
	out.Reset()
	if code := run([]string{"check", "--config", pinned}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "pins trusted on first use (changes blocked)") {
		t.Errorf("check of a pinning block: exit %d, %q%q", code, out.String(), errb.String())
	}
	locked := writeConfig(t, "upstreams:\n  - {name: up, url: "+url+"}\npinning: {lockFile: missing.lock}\n")
	errb.Reset()
	if code := run([]string{"check", "--config", locked}, &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "switchboard pin --config") {
		t.Errorf("check with a missing lock file: exit %d, %q", code, errb.String())
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// client is a client of the gateway, driving one scenario's traffic through it: the calls the Go SDK's
// conformance client (go-sdk/conformance/everything-client) makes against the scenario server directly, made
// against the gateway's /mcp instead. When the gateway asks to connect a person's account, person follows the
// link.
type client struct {
	scenario string
	version  string // MCP_CONFORMANCE_PROTOCOL_VERSION: the era the client speaks to the gateway
	ctx      scenarioContext
	mcpURL   string
	http     *http.Client // carries the client's token when the gateway authenticates
	person   *person      // nil unless the upstream is user-oauth
	log      *log.Logger
	// listChanged hears notifications/tools/list_changed (buffered 1: one pending notice is enough).
	listChanged chan struct{}
}

// person is the human of a user-oauth flow: a browser that follows a connect link and every redirect after it
// (the gateway's sign-in at the harness's identity provider, the upstream's authorization server, the
// callbacks), keeping cookies. It never reads a code or a token: it only opens the link.
type person struct {
	browser *http.Client
	log     *log.Logger
}

func newPerson(l *log.Logger) (*person, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("cookie jar: %w", err)
	}
	return &person{browser: &http.Client{Jar: jar}, log: l}, nil
}

// open follows link to its last page; anything but 200 there is an error with the page's text.
func (p *person) open(ctx context.Context, link string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return fmt.Errorf("connect link: %w", err)
	}
	resp, err := p.browser.Do(req)
	if err != nil {
		return fmt.Errorf("following the connect link: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	p.log.Printf("person: the connect link ended at %s: %s", resp.Request.URL.Redacted(), resp.Status)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the connect link ended at %s with %s: %s", resp.Request.URL.Redacted(), resp.Status, pageText(body))
	}
	return nil
}

// pageText is a page's text, roughly, for an error message.
func pageText(b []byte) string {
	s := string(b)
	var out strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
			out.WriteByte(' ')
		case !in:
			out.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(out.String()), " ")
}

// elicit answers the gateway's elicitations: a URL one is the person opening the link; a form one is accepted
// with the content the scenario wants (everything-client's answers).
func (c *client) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if req.Params.Mode == "url" {
		if c.person == nil {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		if err := c.person.open(ctx, req.Params.URL); err != nil {
			c.log.Printf("elicitation: %v", err)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	content := map[string]any{}
	if c.scenario == "sep-2322-client-request-state" {
		content["confirmed"] = true
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// connect opens a session with the gateway in the scenario's era, declaring form and URL elicitation.
func (c *client) connect(ctx context.Context) (*mcp.ClientSession, error) {
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
		ElicitationHandler: c.elicit,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.listChanged <- struct{}{}:
			default:
			}
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			c.log.Printf("client: notifications/elicitation/complete %s", r.Params.ElicitationID)
		},
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "switchboard-conformance-client", Version: "1.0.0"}, opts)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.mcpURL, HTTPClient: c.http},
		&mcp.ClientSessionOptions{ProtocolVersion: c.version})
	if err != nil {
		return nil, fmt.Errorf("connect to the gateway: %w", err)
	}
	return cs, nil
}

// call calls a tool. A 2025-11-25 client told to connect an account (-32042, URL elicitation required) shows
// the link to the person and, once they are through, makes the call again, as the specification has it; a
// 2026-07-28 client gets an input_required result instead, which the SDK answers with elicit and retries itself.
func (c *client) call(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	var rpcErr *jsonrpc.Error
	if err == nil || c.person == nil || !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		return res, err
	}
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil {
		return nil, fmt.Errorf("-32042 data: %w", err)
	}
	for _, e := range data.Elicitations {
		if err := c.person.open(ctx, e.URL); err != nil {
			return nil, err
		}
	}
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// run makes the scenario's traffic.
func (c *client) run(ctx context.Context) error {
	cs, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer cs.Close()
	switch {
	case strings.HasPrefix(c.scenario, "auth/"):
		return c.runAuth(ctx, cs)
	case c.scenario == "initialize", c.scenario == "json-schema-ref-no-deref", c.scenario == "request-metadata":
		_, err := cs.ListTools(ctx, nil)
		if c.scenario == "json-schema-ref-no-deref" {
			return nil // the referee watches for a fetch of its canary, whatever the list says
		}
		return err
	case c.scenario == "tools_call":
		return c.listAndCall(ctx, cs, "add_numbers", map[string]any{"a": 5, "b": 3})
	case c.scenario == "elicitation-sep1034-client-defaults":
		return c.listAndCall(ctx, cs, "test_client_elicitation_defaults", map[string]any{})
	case c.scenario == "sse-retry":
		return c.listAndCall(ctx, cs, "test_reconnection", map[string]any{})
	case c.scenario == "json-schema-2020-12-preservation":
		return c.schemaEcho(ctx, cs)
	case c.scenario == "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if _, err := c.call(ctx, cs, name, map[string]any{}); err != nil {
				c.log.Printf("call %s: %v (some are meant to fail)", name, err)
			}
		}
		return nil
	case c.scenario == "http-standard-headers":
		return c.everyVerb(ctx, cs)
	case c.scenario == "http-custom-headers":
		if _, err := cs.ListTools(ctx, nil); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		for _, tc := range c.toolCalls() {
			if _, err := c.call(ctx, cs, tc.name, tc.args); err != nil {
				c.log.Printf("call %s: %v", tc.name, err)
			}
		}
		return nil
	case c.scenario == "http-invalid-tool-headers":
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range tools.Tools {
			if _, err := c.call(ctx, cs, t.Name, map[string]any{"region": "us-west1"}); err != nil {
				c.log.Printf("call %s: %v", t.Name, err)
			}
		}
		return nil
	default:
		_, err := cs.ListTools(ctx, nil)
		return err
	}
}

func (c *client) listAndCall(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) error {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
		return fmt.Errorf("the gateway lists no tool %q (it lists %s)", name, toolNames(tools.Tools))
	}
	res, err := c.call(ctx, cs, name, args)
	if err != nil {
		return fmt.Errorf("call %s: %w", name, err)
	}
	if res.IsError {
		return fmt.Errorf("call %s: tool error: %s", name, resultText(res))
	}
	return nil
}

// runAuth is an auth scenario: list the tools and call test-tool. Before the person connects, a user-oauth
// upstream offers only its stand-in tool ("connect"); calling it asks to connect, after which the real tools
// are listed. A person would do the same: connect, then use the tool.
func (c *client) runAuth(ctx context.Context, cs *mcp.ClientSession) error {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == name })
	}
	if !has("test-tool") && has("connect") {
		res, err := c.call(ctx, cs, "connect", map[string]any{})
		if err != nil {
			return fmt.Errorf("call connect (the stand-in): %w", err)
		}
		c.log.Printf("client: the stand-in answered (isError %t): %s", res.IsError, resultText(res))
		// The gateway lists the upstream through the person's session now and says so with list_changed. A
		// person who still sees only the stand-in after a while calls it again (at most twice): the upstream may
		// have refused the grant meanwhile (its authorization server moved), and the stand-in then asks to
		// connect again.
		again := 0
		for {
			if tools, err = cs.ListTools(ctx, nil); err != nil {
				return fmt.Errorf("tools/list after connecting: %w", err)
			}
			if has("test-tool") {
				break
			}
			select {
			case <-c.listChanged:
			case <-time.After(3 * time.Second):
				if again < 2 && has("connect") {
					again++
					res, err := c.call(ctx, cs, "connect", map[string]any{})
					if err != nil {
						return fmt.Errorf("call connect (the stand-in) again: %w", err)
					}
					c.log.Printf("client: the stand-in answered again (isError %t): %s", res.IsError, resultText(res))
				}
			case <-ctx.Done():
				return fmt.Errorf("no test-tool listed after connecting, and no list_changed: %w", ctx.Err())
			}
		}
	}
	if !has("test-tool") {
		return fmt.Errorf("the gateway lists no tool test-tool (it lists %s)", toolNames(tools.Tools))
	}
	res, err := c.call(ctx, cs, "test-tool", map[string]any{})
	if err != nil && c.person != nil {
		// An upstream that wants more scopes than the person granted refuses the call (403 insufficient_scope),
		// and the gateway asks the person to connect again at their next call (SEP-2350 step-up). A person shown
		// the refusal calls again; the gateway's request to connect is answered like the first one.
		c.log.Printf("client: call test-tool: %v; calling again, as a person would", err)
		res, err = c.call(ctx, cs, "test-tool", map[string]any{})
	}
	if err != nil {
		return fmt.Errorf("call test-tool: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("call test-tool: tool error: %s", resultText(res))
	}
	return nil
}

func (c *client) schemaEcho(ctx context.Context, cs *mcp.ClientSession) error {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	i := slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
	if i < 0 {
		return fmt.Errorf("the gateway lists no json_schema_2020_12_tool (it lists %s)", toolNames(tools.Tools))
	}
	_, err = c.call(ctx, cs, "json_schema_echo", map[string]any{"schema": tools.Tools[i].InputSchema})
	return err
}

// everyVerb calls a tool, reads a resource and gets a prompt, the first of each.
func (c *client) everyVerb(ctx context.Context, cs *mcp.ClientSession) error {
	if tools, err := cs.ListTools(ctx, nil); err == nil && len(tools.Tools) > 0 {
		_, _ = c.call(ctx, cs, tools.Tools[0].Name, map[string]any{})
	}
	if res, err := cs.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
		_, _ = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
	}
	if prompts, err := cs.ListPrompts(ctx, nil); err == nil && len(prompts.Prompts) > 0 {
		_, _ = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompts.Prompts[0].Name, Arguments: map[string]string{}})
	}
	return nil
}

type toolCall struct {
	name string
	args map[string]any
}

// toolCalls is the context's toolCalls: [{name, arguments}] (http-custom-headers).
func (c *client) toolCalls() []toolCall {
	raw, _ := c.ctx["toolCalls"].([]any)
	var out []toolCall
	for _, item := range raw {
		obj, _ := item.(map[string]any)
		name, _ := obj["name"].(string)
		args, _ := obj["arguments"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		out = append(out, toolCall{name: name, args: args})
	}
	return out
}

func toolNames(tools []*mcp.Tool) string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return fmt.Sprintf("%q", names)
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

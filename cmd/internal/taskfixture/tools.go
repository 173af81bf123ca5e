package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' timings, chosen against the gateway's sync window (500ms by
// default): a tool that must become a task works longer than the window
// before it answers or asks for input; test_tool_with_task asks at once, so
// that its first round stays synchronous, and works longer than the window
// after the answer, so that its second round becomes a task.
const (
	// jobTime is how long failing_job and protocol_error_job work before they
	// fail, and confirm_delete and multi_input before they ask for input.
	jobTime = time.Second
	// finishTime is how long test_tool_with_task works after its answer.
	finishTime = 2 * time.Second
	// maxSeconds bounds slow_compute's seconds.
	maxSeconds = 3600
)

// newServer returns the fixture server with its tools.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "switchboard-taskfixture", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Answers at once: Hello, {name}!"}, greet)
	mcp.AddTool(s, &mcp.Tool{Name: "slow_compute", Description: "Sleeps `seconds` seconds, then answers; stops when the call is cancelled"}, slowCompute)
	mcp.AddTool(s, &mcp.Tool{Name: "failing_job", Description: "Works 1s, then fails with a tool error (isError)"}, failingJob)
	mcp.AddTool(s, &mcp.Tool{Name: "protocol_error_job", Description: "Works 1s, then fails with a JSON-RPC error (-32603)"}, protocolErrorJob)
	mcp.AddTool(s, &mcp.Tool{Name: "confirm_delete", Description: "Works 1s, then asks the user to confirm deleting `filename`, then answers"}, confirmDelete)
	mcp.AddTool(s, &mcp.Tool{Name: "multi_input", Description: "Works 1s, then asks two questions at once (name, confirm), then answers"}, multiInput)
	mcp.AddTool(s, &mcp.Tool{Name: "test_tool_with_task", Description: "Asks for user_name at once, then works 2s and greets the user by name"}, toolWithTask)
	return s
}

// work waits d, or until ctx is done.
func work(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

type greetArgs struct {
	Name string `json:"name" jsonschema:"whom to greet"`
}

func greet(_ context.Context, _ *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, any, error) {
	return text("Hello, %s!", in.Name), nil, nil
}

type slowArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to work, in seconds (0 answers at once)"`
	Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the answer"`
}

func slowCompute(ctx context.Context, _ *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
	if in.Seconds < 0 || in.Seconds > maxSeconds {
		return nil, nil, fmt.Errorf("seconds must be between 0 and %d, not %g", maxSeconds, in.Seconds)
	}
	if err := work(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
		return nil, nil, fmt.Errorf("slow_compute %q stopped: %w", in.Label, err)
	}
	return text("slow_compute %q: done after %gs", in.Label, in.Seconds), nil, nil
}

func failingJob(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if err := work(ctx, jobTime); err != nil {
		return nil, nil, err
	}
	res := text("failing_job: the job failed (a tool execution error, on purpose)")
	res.IsError = true
	return res, nil, nil
}

// protocolErrorJob fails with a JSON-RPC error: the SDK sends an error a tool
// handler returns as a *jsonrpc.Error (not wrapped) as the response's error,
// and any other error as a result with isError.
func protocolErrorJob(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if err := work(ctx, jobTime); err != nil {
		return nil, nil, err
	}
	return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "protocol_error_job: internal failure (a JSON-RPC protocol error, on purpose)"}
}

// ask is a form elicitation for one property (type "string" or "boolean").
func ask(message, property, typ string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: message,
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{property: map[string]any{"type": typ}},
			"required":   []string{property},
		},
	}
}

// answer is the client's answer to the input request key, if it gave one.
func answer(req *mcp.CallToolRequest, key string) (*mcp.ElicitResult, bool) {
	r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
	return r, ok && r != nil
}

// accepted is an accepted answer's property, or nil.
func accepted(r *mcp.ElicitResult, property string) any {
	if r == nil || r.Action != "accept" {
		return nil
	}
	return r.Content[property]
}

type deleteArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete (nothing is deleted)"`
}

func confirmDelete(ctx context.Context, req *mcp.CallToolRequest, in deleteArgs) (*mcp.CallToolResult, any, error) {
	r, ok := answer(req, "confirm")
	if !ok {
		if req.Params.InputResponses == nil { // the first round: work, then ask
			if err := work(ctx, jobTime); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"confirm": ask(fmt.Sprintf("Delete %s?", in.Filename), "confirm", "boolean"),
		}}, nil, nil
	}
	if accepted(r, "confirm") == true {
		return text("Deleted %s.", in.Filename), nil, nil
	}
	return text("Kept %s: deletion not confirmed (%s).", in.Filename, r.Action), nil, nil
}

// multiInput asks two questions in one round. To a 2026-07-28 client both are
// in one input_required result; for an older session the SDK sends both
// elicitation/create requests at once, from two goroutines, so both are
// outstanding together. A retry that answers only one is asked the other,
// with the answer it gave kept in the requestState it echoes next time (plain
// JSON, not sealed as a real server's must be: this is a test fixture).
func multiInput(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	if req.Params.InputResponses == nil && req.Params.RequestState == "" { // the first round: work, then ask
		if err := work(ctx, jobTime); err != nil {
			return nil, nil, err
		}
	}
	got := map[string]*mcp.ElicitResult{}
	if req.Params.RequestState != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.Params.RequestState)
		if err == nil {
			err = json.Unmarshal(b, &got)
		}
		if err != nil {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "multi_input: requestState is not one of mine"}
		}
	}
	questions := map[string]*mcp.ElicitParams{
		"name":    ask("What is your name?", "name", "string"),
		"confirm": ask("Shall I go on?", "confirm", "boolean"),
	}
	missing := mcp.InputRequestMap{}
	for key, q := range questions {
		if r, ok := answer(req, key); ok {
			got[key] = r
		} else if got[key] == nil {
			missing[key] = q
		}
	}
	if len(missing) > 0 {
		res := &mcp.CallToolResult{InputRequests: missing}
		if len(got) > 0 {
			b, err := json.Marshal(got)
			if err != nil {
				return nil, nil, err
			}
			res.RequestState = base64.RawURLEncoding.EncodeToString(b)
		}
		return res, nil, nil
	}
	name, confirm := got["name"], got["confirm"]
	return text("multi_input: name=%v (%s), confirm=%v (%s)",
		accepted(name, "name"), name.Action, accepted(confirm, "confirm"), confirm.Action), nil, nil
}

// toolWithTask asks for the user's name at once, then works finishTime and
// greets the user by name.
func toolWithTask(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
	r, ok := answer(req, "user_name")
	if !ok {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"user_name": ask("What is your name?", "name", "string"),
		}}, nil, nil
	}
	name, _ := accepted(r, "name").(string)
	if name == "" {
		name = "stranger"
	}
	if err := work(ctx, finishTime); err != nil {
		return nil, nil, err
	}
	return text("Hello, %s! test_tool_with_task has finished its work.", name), nil, nil
}

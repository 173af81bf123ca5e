package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Tool is one tool a run may call, as the endpoint exposes it.
type Tool struct {
	// Name is the exposed name: the script calls tools[Name], exactly.
	Name        string
	Description string
	// ReadOnly is annotations.readOnlyHint: true; every other tool is a write and needs consent.
	ReadOnly     bool
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
}

// ParseTool reads a tool definition as tools/list gives it.
func ParseTool(def json.RawMessage) (Tool, error) {
	var d struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  struct {
			ReadOnlyHint bool `json:"readOnlyHint"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(def, &d); err != nil {
		return Tool{}, fmt.Errorf("codemode: a tool definition: %w", err)
	}
	return Tool{Name: d.Name, Description: d.Description, ReadOnly: d.Annotations.ReadOnlyHint,
		InputSchema: d.InputSchema, OutputSchema: d.OutputSchema}, nil
}

// Caller makes a script's tool call: a full gateway call as the run's caller (the routing layer implements it).
// It returns the tools/call result as the upstream gave it; an error is a JSON-RPC error or a gateway refusal,
// and its message is what the script's thrown Error says.
type Caller interface {
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// Decision is a person's answer to a write.
type Decision int

const (
	// Decline refuses the call: it throws in the script.
	Decline Decision = iota
	// AllowOnce allows this call.
	AllowOnce
	// AllowForRun allows this tool for the rest of the run.
	AllowForRun
)

// Approver asks whether a script may make a write: a call to a tool not marked readOnlyHint. The routing
// layer implements it with elicitation, or a policy where there is no one to ask.
type Approver interface {
	Approve(ctx context.Context, tool string, args json.RawMessage) (Decision, error)
}

// toolValue is what a script's await gives for a tools/call result: its structuredContent when it has one, else
// its content. A result with isError is the error message its text content carries.
func toolValue(raw json.RawMessage) (json.RawMessage, string) {
	var r struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Sprintf("the tool's result is not a tools/call result: %v", err)
	}
	if r.IsError {
		return nil, contentText(r.Content)
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		return r.StructuredContent, ""
	}
	if len(r.Content) == 0 {
		return json.RawMessage("[]"), ""
	}
	return r.Content, ""
}

// contentText is the text items of a content array, joined; "tool error" when there are none.
func contentText(content json.RawMessage) string {
	var items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &items)
	var texts []string
	for _, it := range items {
		if it.Type == "text" && it.Text != "" {
			texts = append(texts, it.Text)
		}
	}
	if len(texts) == 0 {
		return "tool error"
	}
	return strings.Join(texts, "\n")
}

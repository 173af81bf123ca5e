package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// scriptCaller makes a script's tool calls: each a tools/call request of the run's caller, under an id of the
// run's own, sent through the session's HandleRequest as the client's would be. Its answer is read from a stream
// of its own; what else comes on it (an upstream's requests for input, its log messages) goes to run_script's
// stream, where the client reads.
type scriptCaller struct {
	h   *codeHost
	s   *Session
	run *scriptRun
	seq atomic.Int64
}

var _ codemode.Caller = (*scriptCaller)(nil)

// Call makes one call; ctx is the run's (its id, the caller's policy, the run's span). Cancelling it cancels the
// call as the client's notifications/cancelled would.
func (c *scriptCaller) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	s := c.s
	id := jsonrpc.AppendQuote(nil, "sb-script-"+c.run.id+"-"+strconv.FormatInt(c.seq.Add(1), 10))
	params := jsonrpc.AppendQuote([]byte(`{"name":`), name)
	if len(args) == 0 {
		args = []byte(`{}`)
	}
	params = append(append(append(params, `,"arguments":`...), args...), '}')
	m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, id, protocol.MethodToolsCall, params))
	if err != nil {
		return nil, fmt.Errorf("the arguments of %s are not valid JSON: %w", name, err)
	}
	o := s.r.NewStream(1, 64)
	o.script = c.run.id
	// Marked as a task's call: a script's call runs within the run, never as a task of its own.
	s.HandleRequest(context.WithValue(ctx, taskRunKey{}, true), m, o)
	for {
		msg, final, ok := o.Next(ctx)
		if !ok {
			if ctx.Err() != nil {
				s.Cancel(o, id, "run_script was cancelled, or ran past its limits")
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s ended without an answer", name)
		}
		if !final {
			// An upstream's request for input, or a log message: the client answers the session, which routes
			// the answer to the upstream that asked.
			class := ClassNotice
			if r, err := jsonrpc.Parse(msg); err == nil && r.Kind() == jsonrpc.KindRequest {
				class = classRequest
			}
			if out := c.h.current(c.run).out; out != nil {
				out.Push(msg, class)
			}
			continue
		}
		r, err := jsonrpc.Parse(msg)
		if err != nil {
			return nil, fmt.Errorf("%s: a malformed answer: %w", name, err)
		}
		if e := r.Error(); e != nil {
			return nil, errors.New(errorMessage(e))
		}
		res := r.Result()
		if isInputRequired(res) {
			s.Cancel(o, id, "a script cannot give a tool the input it asks for")
			return nil, fmt.Errorf("%s asks for the user's input, which a script cannot give; call it directly", name)
		}
		return json.RawMessage(clone(res)), nil
	}
}

// scriptConsent asks the person whether a script may write: by elicitation on run_script's stream for a legacy
// client that declared it; by an input_required answer to run_script for a 2026-07-28 client, and for a run that
// became a task, of either era (codemodeinput.go).
type scriptConsent struct {
	h      *codeHost
	s      *Session
	run    *scriptRun
	writes codemode.Writes
}

var _ codemode.Approver = (*scriptConsent)(nil)

// Choices of the consent question.
const (
	consentOnce = "allow once"
	consentRun  = "allow for the rest of this run"
)

func (a *scriptConsent) Approve(ctx context.Context, tool string, args json.RawMessage) (codemode.Decision, error) {
	switch a.writes {
	case codemode.WritesAllow:
		return codemode.AllowForRun, nil
	case codemode.WritesDeny:
		return codemode.Decline, errors.New("this endpoint lets scripts only read (codeMode writes: deny)")
	}
	s := a.s
	if s.caps.Elicitation == nil || (s.caps.Elicitation.Form == nil && s.caps.Elicitation.URL != nil) {
		return codemode.Decline, errors.New("the client does not support elicitation, so the user cannot be asked; call the tool directly, or ask the admin for codeMode writes: allow")
	}
	p := consentQuestion(tool, args)
	lc, ok := s.era.(*legacyClient)
	if !ok {
		// A 2026-07-28 client, or a run that is a task (whose session is a pooled one, whatever the client's era):
		// run_script answers input_required. A task's job keeps the question in the task (input_required), where
		// the client finds it (tasks/get, or a 2025-11-25 client's tasks/result stream), and its answer comes back
		// as the retry.
		return a.h.askRetry(ctx, a.s, a.run, p)
	}
	out := a.h.current(a.run).out
	if out == nil {
		return codemode.Decline, errors.New("run_script's request is gone")
	}
	ch := make(chan jsonrpc.Message, 1)
	gid := lc.addServerReq(&serverReq{out: out, answer: ch})
	forget := func() { lc.forgetServerReq(gid) }
	if !out.Push(jsonrpc.AppendRequest(nil, jsonrpc.AppendInt(nil, gid), "elicitation/create", p), classRequest) {
		forget()
		return codemode.Decline, errors.New("the client is not reading its stream")
	}
	select {
	case m := <-ch:
		if e := m.Error(); e != nil {
			return codemode.Decline, errors.New("the client refused the question: " + errorMessage(e))
		}
		return consentAnswer(m.Result()), nil
	case <-ctx.Done():
		forget()
		cp := cancelledParams(jsonrpc.AppendInt(nil, gid), "the script ended")
		out.Push(jsonrpc.AppendNotification(nil, "notifications/cancelled", cp), ClassNotice)
		return codemode.Decline, ctx.Err()
	}
}

// consentQuestion is the params of the elicitation/create that asks whether a script may call a tool, showing the
// tool and its arguments.
func consentQuestion(tool string, args json.RawMessage) []byte {
	shown := string(args)
	if len(shown) > 2000 {
		shown = shown[:2000] + "…"
	}
	p := []byte(`{"mode":"form","message":`)
	p = jsonrpc.AppendQuote(p, fmt.Sprintf("A script wants to call %s, which may change things, with these arguments:\n%s", tool, shown))
	p = append(p, `,"requestedSchema":{"type":"object","properties":{"decision":{"type":"string","title":"Allow this call?","enum":[`...)
	p = jsonrpc.AppendQuote(p, consentOnce)
	p = append(p, ',')
	p = jsonrpc.AppendQuote(p, consentRun)
	return append(p, `]}},"required":["decision"]}}`...)
}

// consentAnswer reads an ElicitResult: accepted "for the rest of this run", accepted once, or declined.
func consentAnswer(result []byte) codemode.Decision {
	action, _ := jsonrpc.LookupString(result, "action")
	decision, _ := jsonrpc.LookupString(result, "content", "decision")
	switch {
	case action != "accept":
		return codemode.Decline
	case decision == consentRun:
		return codemode.AllowForRun
	}
	return codemode.AllowOnce
}

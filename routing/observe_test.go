package routing

import (
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Definitions the observing upstream offers.
const (
	observedTool   = `{"name":"add","description":"Adds two numbers.","inputSchema":{"type":"object"}}`
	observedPrompt = `{"name":"greet","description":"A greeting.","arguments":[{"name":"who"}]}`
	observedURI    = "file:///notes.txt"
)

// observedUpstream offers one tool, one prompt and one resource and answers their calls; a tools/call of "fail"
// ends in a JSON-RPC error.
func observedUpstream() *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		var result string
		switch m.Method() {
		case "tools/call":
			if name, _ := jsonrpc.LookupString(m.Params(), "name"); name == "fail" {
				c.sendLocked(jsonrpc.AppendError(nil, m.ID(), -32602, "no such tool", nil))
				return
			}
			result = `{"content":[]}`
		case "prompts/get":
			result = `{"messages":[]}`
		case "resources/read":
			result = `{"contents":[{"uri":"` + observedURI + `","text":"hi"}]}`
		case "prompts/list":
			result = `{"prompts":[` + observedPrompt + `]}`
		case "resources/list":
			result = `{"resources":[{"uri":"` + observedURI + `","name":"notes"}]}`
		default:
			defaultAnswer(c, m, fakeInitCaps, `[`+observedTool+`]`)
			return
		}
		c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
	})
}

// callEvents collects audit events.
type callEvents struct {
	mu     sync.Mutex
	events []CallEvent
}

func (a *callEvents) add(e CallEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
}

func (a *callEvents) last(t *testing.T) CallEvent {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.events) == 0 {
		t.Fatal("no call event")
	}
	return a.events[len(a.events)-1]
}

// TestCallEventDefinitionHash: the audit event of a tools/call and of a prompts/get carries the pin hash of the
// definition the catalog has for the item called (the hash pinning knows, pin.Hash of the upstream's
// definition, not of the renamed one clients see); a resources/read carries none. A call the policy denies
// carries the hash too.
func TestCallEventDefinitionHash(t *testing.T) {
	var audit callEvents
	r := startRouter(t, Options{Audit: audit.add}, UpstreamConfig{Name: "math", Prefix: "m__", Mode: Shared, Transport: observedUpstream(), Kind: "stdio"})
	s := r.session(defaultClientCaps)
	toolHash, promptHash := mustHash(t, pin.Tool, observedTool), mustHash(t, pin.Prompt, observedPrompt)

	roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"m__add","arguments":{}}}`)
	if e := audit.last(t); e.Method != "tools/call" || e.Tool != "m__add" || e.DefinitionHash != toolHash {
		t.Fatalf("tools/call event %+v, want the hash %s", e, toolHash)
	}
	roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"m__greet"}}`)
	if e := audit.last(t); e.Method != "prompts/get" || e.DefinitionHash != promptHash {
		t.Fatalf("prompts/get event %+v, want the hash %s", e, promptHash)
	}
	roundTrip(t, r, s, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"`+observedURI+`"}}`)
	if e := audit.last(t); e.Method != "resources/read" || e.DefinitionHash != "" {
		t.Fatalf("resources/read event %+v, want no hash", e)
	}

	denied := r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Capabilities: []byte(defaultClientCaps),
		Allow: func(up, kind, name string) bool { return kind != "tool" }})
	roundTrip(t, r, denied, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"m__add","arguments":{}}}`)
	if e := audit.last(t); e.Outcome != "denied" || e.DefinitionHash != toolHash {
		t.Fatalf("denied event %+v, want the hash %s", e, toolHash)
	}
}

package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestDuplicateMemberEveryFrontEnd (issue 31, item 1): a tools/call whose params hold "arguments" twice, the second
// spelled with an escape, is refused with -32602 naming the member on every front end: streamable HTTP, a
// 2025-03-26 batch element, 2026-07-28, HTTP+SSE, stdio and a stdio batch element. An upstream's parser keeps the
// last member, so the gateway cannot check the first and forward both.
func TestDuplicateMemberEveryFrontEnd(t *testing.T) {
	h := rawGateway(t)
	base := strings.TrimSuffix(h.url, "/mcp")
	const params = `{"name":"alpha__echo","arguments":{"text":"checked"},"\u0061rguments":{"text":"CLIENT-CHOSEN"}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	modernCall := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"checked"},"\u0061rguments":{"text":"CLIENT-CHOSEN"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	streamable := h.raw(t)
	streamable.initialize("2025-11-25")
	batch := h.raw(t)
	batch.initialize("2025-03-26")
	modern := h.raw(t)
	legacy := openLegacy(t, base, nil)
	if r := legacy.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}`, nil); r.status != http.StatusAccepted {
		t.Fatalf("initialize over HTTP+SSE: HTTP %d %s", r.status, r.body)
	}
	legacy.next() // its answer
	stdio := startStdio(t, h.r)
	stdio.initialize("2025-03-26")

	for _, fe := range []struct {
		name   string
		answer func(t *testing.T) rpcMsg
	}{
		{"streamable HTTP", func(t *testing.T) rpcMsg { return decodeMsg(t, streamable.do(call, nil).body) }},
		{"2025-03-26 batch element", func(t *testing.T) rpcMsg {
			return batchElement(t, batch.do("["+call+`,{"jsonrpc":"2.0","id":2,"method":"ping"}]`, nil).body, "1")
		}},
		{"2026-07-28", func(t *testing.T) rpcMsg {
			r := modernDo(t, modern, modernCall, nil)
			if r.status != http.StatusBadRequest {
				t.Errorf("HTTP %d, want 400 for an error", r.status)
			}
			return decodeMsg(t, r.body)
		}},
		{"HTTP+SSE", func(t *testing.T) rpcMsg {
			if r := legacy.post(call, nil); r.status != http.StatusAccepted {
				t.Fatalf("POST /message: HTTP %d %s", r.status, r.body)
			}
			return decodeMsg(t, []byte(legacy.next()[1]))
		}},
		{"stdio", func(t *testing.T) rpcMsg {
			stdio.send(call)
			return decodeMsg(t, []byte(stdio.next()))
		}},
		{"stdio batch element", func(t *testing.T) rpcMsg {
			stdio.send("[" + call + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
			return batchElement(t, []byte(stdio.next()), "1")
		}},
	} {
		t.Run(fe.name, func(t *testing.T) {
			m := fe.answer(t)
			if m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, `"arguments" twice`) {
				t.Errorf("answer %+v (result %s); want -32602 naming \"arguments\" twice", m.Error, m.Result)
			}
		})
	}
}

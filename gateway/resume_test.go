package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// TestResumeTakesOverStream: a client resumes a POST stream with GET and Last-Event-ID while the server still
// holds the old connection (it has not seen it drop): the GET takes the stream over instead of being refused,
// and gets the rest of it, answer included.
func TestResumeTakesOverStream(t *testing.T) {
	h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	c := h.raw(t)
	init := c.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	c.session, c.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"

	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, h.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"take","ms":1000},"_meta":{"progressToken":"p"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %v %v", resp, err)
	}
	defer resp.Body.Close() // kept open: the server still holds this stream when the GET arrives
	var buf []byte
	chunk := make([]byte, 1024)
	for !strings.Contains(string(buf), `"progress"`) {
		n, err := resp.Body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			t.Fatalf("reading the POST stream: %v (%s)", err, buf)
		}
	}
	last := ""
	for _, line := range strings.Split(string(buf), "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			last = id
		}
	}

	get, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, h.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", c.session)
	get.Header.Set("Last-Event-ID", last)
	gresp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer gresp.Body.Close()
	if gresp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(gresp.Body)
		t.Fatalf("GET with Last-Event-ID while the old connection is held: HTTP %d %s", gresp.StatusCode, body)
	}
	rest, _ := io.ReadAll(gresp.Body)
	if !strings.Contains(string(rest), `"id":"r1"`) || !strings.Contains(string(rest), "slow done take") {
		t.Fatalf("the resumed stream lacks the answer:\n%s", rest)
	}
}

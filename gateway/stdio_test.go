package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// TestStdioFrontEnd drives the stdio front end line by line: initialize, a call, a batch (2025-03-26 only, answered
// as one array), malformed lines, and a batch refused in a later version.
func TestStdioFrontEnd(t *testing.T) {
	for _, tc := range []struct {
		version string
		batchOK bool
	}{{"2025-03-26", true}, {"2025-11-25", false}} {
		t.Run(tc.version, func(t *testing.T) {
			h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerDir(t)))
			srv := gateway.New(h.r, gateway.Options{Logger: testLogger()})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(ctxGuard(t))
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- srv.ServeStdio(ctx, inR, outW); outW.Close() }()
			lines := bufio.NewScanner(outR)
			lines.Buffer(make([]byte, 1<<20), 1<<20)
			send := func(s string) {
				t.Helper()
				if _, err := io.WriteString(inW, s+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			next := func() string {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("no more output: %v", lines.Err())
				}
				return lines.Text()
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + tc.version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			if got := next(); !strings.Contains(got, `"id":1,"result"`) || !strings.Contains(got, tc.version) {
				t.Fatalf("initialize answer: %s", got)
			}
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}`)
			if got := next(); !strings.Contains(got, `"id":"two"`) || !strings.Contains(got, "hi") {
				t.Fatalf("call answer: %s", got)
			}
			send(`{not json`)
			if got := next(); !strings.Contains(got, `-32700`) {
				t.Fatalf("malformed line: %s", got)
			}
			send(`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"b"}}}]`)
			got := next()
			if !tc.batchOK {
				if !strings.Contains(got, "-32600") || !strings.Contains(got, "2025-03-26") {
					t.Fatalf("batch in %s: %s", tc.version, got)
				}
			} else {
				var answers []struct {
					ID json.RawMessage `json:"id"`
				}
				if err := json.Unmarshal([]byte(got), &answers); err != nil || len(answers) != 2 {
					t.Fatalf("batch answer is not an array of two: %s (%v)", got, err)
				}
				ids := string(answers[0].ID) + string(answers[1].ID)
				if !strings.Contains(ids, "3") || !strings.Contains(ids, "4") {
					t.Fatalf("batch answer ids: %s", got)
				}
			}
			inW.Close() // stdin closed: the front end returns, as a stdio server does
			if err := <-done; err != nil {
				t.Fatalf("ServeStdio: %v", err)
			}
		})
	}
}

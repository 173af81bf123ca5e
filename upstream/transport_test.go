package upstream

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// TestWriteRefusesZeroMessage: a Write of something that is not a message (the zero Message: a caller's bug)
// is refused by every connection, not sent as an empty body or taken for a response and dropped.
func TestWriteRefusesZeroMessage(t *testing.T) {
	stdio, err := mustTransport(t, Spec{Name: "cat", Command: "cat", Logger: slog.New(slog.DiscardHandler)}).Connect(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stdio.Close()
	ht := mustTransport(t, Spec{Name: "http", URL: "http://127.0.0.1:1/mcp", Logger: slog.New(slog.DiscardHandler)}).(*HTTPTransport)
	streamable, err := ht.Connect(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer streamable.Close()
	meta, err := newRequestMeta(ClientHello{})
	if err != nil {
		t.Fatal(err)
	}
	stateless := ht.connectStateless(waitCtx(t), meta)
	defer stateless.Close()
	for name, c := range map[string]Connection{"stdio": stdio, "streamable HTTP": streamable, "stateless HTTP": stateless} {
		if err := c.Write(waitCtx(t), jsonrpc.Message{}); !errors.Is(err, errNotMessage) {
			t.Errorf("%s: Write(zero Message) = %v, want errNotMessage", name, err)
		}
	}
	if err := stateless.WriteParams(waitCtx(t), jsonrpc.Message{}, []Param{{Header: "Mcp-Param-X", Value: "1"}}); !errors.Is(err, errNotMessage) {
		t.Errorf("stateless HTTP: WriteParams(zero Message) = %v, want errNotMessage", err)
	}
}

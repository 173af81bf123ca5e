package upstream

import (
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

func TestParseDiscoverResult(t *testing.T) {
	tests := []struct{ name, result, info string }{
		{"serverInfo in _meta", `{"supportedVersions":["2026-07-28"],"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"a"}},"serverInfo":{"name":"b"}}`, `{"name":"a"}`},
		{"top-level serverInfo", `{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"b"}}`, `{"name":"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh, err := parseDiscoverResult([]byte(tt.result))
			if err != nil {
				t.Fatal(err)
			}
			if string(sh.ServerInfo) != tt.info || sh.ProtocolVersion != protocol.Modern || !sh.Modern() {
				t.Errorf("hello %+v", sh)
			}
		})
	}
	if (ServerHello{ProtocolVersion: "2025-11-25"}).Modern() || (ServerHello{}).Modern() {
		t.Error("a legacy hello is stateless")
	}
}

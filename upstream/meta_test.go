package upstream

import (
	"encoding/json"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

func TestInjectMeta(t *testing.T) {
	meta, err := newRequestMeta(ClientHello{Capabilities: json.RawMessage(`{ "roots": {} }`), ClientInfo: json.RawMessage(`{"name":"gw","version":"1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	const all = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"gw","version":"1"}`
	tests := []struct {
		name, in, want string // want "" means an error
	}{
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + all + `}}}`},
		{"empty params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{ }}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + all + `} }}`},
		{"params without _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` + all + `},"name":"x"}}`},
		{"empty _meta", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{` + all + `}}}`},
		{"progress token kept", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":7}}}`, `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{` + all + `,"progressToken":7}}}`},
		{"client's capabilities and info kept, version overwritten", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c"},"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`},
		{"only the version added", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{},"io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"spaced, version replaced in place", `{ "jsonrpc" : "2.0", "params" : { "name" : "x", "_meta" : { "io.modelcontextprotocol/protocolVersion" : "1", "io.modelcontextprotocol/clientCapabilities" : {}, "io.modelcontextprotocol/clientInfo" : {} } }, "id" : 1, "method" : "m" }`,
			`{ "jsonrpc" : "2.0", "params" : { "name" : "x", "_meta" : { "io.modelcontextprotocol/protocolVersion" : "2026-07-28", "io.modelcontextprotocol/clientCapabilities" : {}, "io.modelcontextprotocol/clientInfo" : {} } }, "id" : 1, "method" : "m" }`},
		{"spaced, two added before a replacement", `{"jsonrpc":"2.0","id":1,"method":"m","params": { "_meta" : { "io.modelcontextprotocol/protocolVersion":"x" } } }`,
			`{"jsonrpc":"2.0","id":1,"method":"m","params": { "_meta" : {"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"gw","version":"1"}, "io.modelcontextprotocol/protocolVersion":"2026-07-28" } } }`},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, ""},
		{"_meta not an object", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":1}}`, ""},
		{"_meta twice", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{},"_meta":{}}}`, ""},
		{"capabilities twice", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`, ""},
		{"client info twice", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{},"io.modelcontextprotocol/clientInfo":{}}}}`, ""},
		{"version twice", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := jsonrpc.Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := meta.inject(nil, m)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("inject = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("inject =\n%s\nwant\n%s", got, tt.want)
			}
			if _, err := jsonrpc.Parse(got); err != nil {
				t.Errorf("result does not parse: %v", err)
			}
		})
	}
}

func TestHeaderSafe(t *testing.T) {
	// The examples of basic/transports/streamable-http.mdx, Value Encoding.
	tests := []struct{ in, want string }{
		{"us-west1", "us-west1"},
		{"get_weather", "get_weather"},
		{"file:///projects/myapp/config.json", "file:///projects/myapp/config.json"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{"tab\tinside", "=?base64?dGFiCWluc2lkZQ==?="},
		{"", ""},
	}
	for _, tt := range tests {
		if got := headerSafe(tt.in); got != tt.want {
			t.Errorf("headerSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIDKey(t *testing.T) {
	same := [][2]string{{`1`, `1.0`}, {`1`, `1e0`}, {`"a"`, `"\u0061"`}}
	for _, p := range same {
		if idKey([]byte(p[0])) != idKey([]byte(p[1])) || !sameID([]byte(p[0]), []byte(p[1])) {
			t.Errorf("%s and %s differ", p[0], p[1])
		}
	}
	if idKey([]byte(`1`)) == idKey([]byte(`"1"`)) {
		t.Error(`1 and "1" collide`)
	}
}

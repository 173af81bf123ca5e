package jsonrpc

import "testing"

// TestMethodKnownNoAlloc: Method returns MCP's own method names without allocating, and any other name, or an
// escaped spelling of a known one, as it reads.
func TestMethodKnownNoAlloc(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = m.Method() }); n != 0 {
		t.Errorf("Method of tools/call allocates %v times", n)
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "tools/call"},
		{`{"jsonrpc":"2.0","id":1,"method":"vendor/thing"}`, "vendor/thing"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, "tools/call"},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, "notifications/progress"},
	} {
		m, err := Parse([]byte(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Method(); got != tc.want {
			t.Errorf("Method of %s = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

package jsonrpc

import (
	"strings"
	"testing"
)

// benchRequest is a realistic ~2.3 KB tools/call request with nested
// arguments, escapes and non-ASCII text.
func benchRequest() []byte {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"github__search_issues","arguments":{"query":"is:open label:\"bug\" repo:switchboard-mcp/switchboard","filters":{"state":"open","labels":["bug","p1","needs-triage"],"assignee":null,"since":"2025-03-26T00:00:00Z","limit":50,"score":0.75,"nested":{"id":1,"method":"decoy","deeper":{"list":[1,2,3,{"x":"y"}]}}},"body":"`)
	for b.Len() < 2100 {
		b.WriteString(`Lorem ipsum dolor sit amet, \"quoted\" text with unicode é世 and braces {}[] \n `)
	}
	b.WriteString(`"},"_meta":{"progressToken":"client-token-42"}}}`)
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	raw := benchRequest()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendWith(b *testing.B) {
	m, err := Parse(benchRequest())
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 4096)
	id := []byte(`12345`)
	tok := []byte(`"gw-77"`)
	b.ReportAllocs()
	for b.Loop() {
		dst = m.AppendWith(dst[:0], id, ParamEdit{Path: []string{"_meta", "progressToken"}, With: tok})
	}
}

func BenchmarkLookup(b *testing.B) {
	m, err := Parse(benchRequest())
	if err != nil {
		b.Fatal(err)
	}
	params := m.Params()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := Lookup(params, "_meta", "progressToken"); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkCompact(b *testing.B) {
	raw := benchRequest()
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		dst = Compact(dst[:0], raw)
	}
}

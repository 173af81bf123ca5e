package routing

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// BenchmarkToolsCallRoundTrip measures one tools/call forwarded to an upstream that answers at once, and its
// response returned to the client stream: HandleRequest (lookup, id and progress-token rewrite, name splice,
// call table), the fake connection, the link's reader (response routing, id restore) and Stream. The fake's own
// work (a parse and a small AppendResult per message) is included.
func BenchmarkToolsCallRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name string
		msg  string
	}{
		{"plain", `{"jsonrpc":"2.0","id":"req-12345","method":"tools/call","params":{"name":"fake__add","arguments":{"a":1,"b":2}}}`},
		{"progress", `{"jsonrpc":"2.0","id":"req-12345","method":"tools/call","params":{"name":"fake__add","arguments":{"a":1,"b":2},"_meta":{"progressToken":"tok-1"}}}`},
		{"2KB", `{"jsonrpc":"2.0","id":"req-12345","method":"tools/call","params":{"name":"fake__add","arguments":{"text":"` + strings.Repeat("x", 2048) + `"}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// upstream.Dial logs through slog.Default; keep benchmark output lines intact.
			prev := slog.Default()
			slog.SetDefault(discardLogger())
			b.Cleanup(func() { slog.SetDefault(prev) })
			ft := plainUpstream()
			r := startRouter(b, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
			s := r.session(defaultClientCaps)
			m, err := jsonrpc.Parse([]byte(tc.msg))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out := newStream(1, 8)
				s.HandleRequest(context.Background(), m, out)
				msg, final, ok := out.Next(r.ctx)
				if !ok || !final {
					b.Fatalf("no final answer: %s", msg)
				}
			}
			b.StopTimer()
			// Keep the fake's log from growing across b.N rounds in memory stats of later benchmarks.
			ft.mu.Lock()
			ft.log = nil
			ft.mu.Unlock()
		})
	}
}

// BenchmarkCatalogPage renders pages of a 10,000-tool catalog (design §9: ≤ 2 ms a page).
func BenchmarkCatalogPage(b *testing.B) {
	c := toolsCatalog(10000)
	for _, size := range []int{100, 1000} {
		mid := testCodec.encode(kindTools, c.gen[kindTools], 5000, "")
		b.Run(fmt.Sprintf("size=%d/first", size), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.page(kindTools, "", size, testCodec, nil, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("size=%d/cursor", size), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.page(kindTools, mid, size, testCodec, nil, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCursorEncode(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = testCodec.encode(kindTools, 42, i&0xffff, "")
	}
}

func BenchmarkCursorDecode(b *testing.B) {
	c := testCodec.encode(kindTools, 42, 12345, "")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := testCodec.decode(c, kindTools, 42, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExposedName is the cold-path name mapping, for reference.
func BenchmarkExposedName(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = exposedName("fake__", "math.add", maxName)
	}
}

// BenchmarkEndpointPage renders the first page of tools/list through endpoints of a 10,000-tool catalog, beside
// the whole catalog's in the same run (issue 15: an endpoint's page costs at most 1.1× the whole catalog's). The
// sparse endpoint selects 1 tool in 100, so filling a page means skipping 9,900 others.
func BenchmarkEndpointPage(b *testing.B) {
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf(`{"name":"t%05d","inputSchema":{"type":"object"}}`, i)
	}
	up := testUpstream("u", "u__", map[listKind][]string{kindTools: names})
	c := buildCatalog([]*upstreamServer{up}, nil, "", &Shape{Endpoints: []Endpoint{
		{Name: "all", Include: []string{"*"}},
		{Name: "half", Include: []string{"u__t0*", "u__t1*", "u__t2*", "u__t3*", "u__t4*"}},
		{Name: "sparse", Include: []string{"u__t*00"}},
	}}, nil)
	for _, size := range []int{100, 1000} {
		for _, endpoint := range []string{"", "all", "half", "sparse"} {
			name := endpoint
			if name == "" {
				name = "whole"
			}
			b.Run(fmt.Sprintf("size=%d/%s", size, name), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := c.page(kindTools, "", size, testCodec, nil, endpoint); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

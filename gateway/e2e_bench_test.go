package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// End-to-end benchmarks of one tools/call: the official Go SDK client → the gateway's handler (httptest, loopback
// HTTP) → an in-process Go SDK upstream (streamable HTTP), against the same client calling that upstream directly.
// The difference is what the gateway costs, net/http included; allocations are the whole process's (client,
// gateway and upstream). Profile with:
//
//	go test ./gateway -run '^$' -bench BenchmarkE2E -benchtime 5s -cpuprofile cpu.out
//	go tool pprof -top -focus 'switchboard/(gateway|routing|upstream)' gateway.test cpu.out

type e2eEchoIn struct {
	Text string `json:"text"`
}

func e2eLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// e2eSetup starts the upstream and a gateway in front of it with two upstream entries on the same server: pc
// (per-client sessions) and sh (one shared session).
func e2eSetup(b *testing.B) (upURL, gwURL string) {
	b.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns its text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in e2eEchoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(up.Close)

	var ups []routing.UpstreamConfig
	for _, u := range []struct {
		name string
		mode routing.SessionMode
	}{{"pc", routing.PerClient}, {"sh", routing.Shared}} {
		tr, err := upstream.NewTransport(upstream.Spec{Name: u.name, URL: up.URL, Logger: e2eLogger()})
		if err != nil {
			b.Fatal(err)
		}
		ups = append(ups, routing.UpstreamConfig{Name: u.name, Prefix: u.name + "__", Mode: u.mode, Transport: tr, Kind: "http"})
	}
	r, err := routing.New(routing.Options{Logger: e2eLogger()}, ups)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	gw := httptest.NewServer(gateway.New(r, gateway.Options{Logger: e2eLogger()}).Handler())
	b.Cleanup(func() {
		cancel()
		<-done
		gw.CloseClientConnections()
		gw.Close()
	})
	if err := r.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	return up.URL, gw.URL + "/mcp"
}

func e2eConnect(b *testing.B, url string) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1.0.0"}, nil)
	// Both sides at the same legacy version: the SDK client would speak 2026-07-28 to the gateway but 2025-11-25 to
	// the stateful upstream, and the ratio would compare two protocols (modern_bench_test.go compares those).
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func e2eCall(cs *mcp.ClientSession, tool string) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello from the benchmark"}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool error: %v", res.Content)
	}
	return nil
}

func BenchmarkE2EToolsCall(b *testing.B) {
	upURL, gwURL := e2eSetup(b)
	targets := []struct{ name, url, tool string }{
		{"direct", upURL, "echo"},
		{"gateway-per-client", gwURL, "pc__echo"},
		{"gateway-shared", gwURL, "sh__echo"},
	}
	for _, t := range targets {
		// One client, one call at a time: latency.
		b.Run(t.name+"/serial", func(b *testing.B) {
			cs := e2eConnect(b, t.url)
			defer cs.Close()
			// Per-client upstream sessions start on first use.
			if err := e2eCall(cs, t.tool); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := e2eCall(cs, t.tool); err != nil {
					b.Fatal(err)
				}
			}
		})
		// 32 clients (16 per CPU on the 2-core reference machine), each with its own session: throughput.
		pool := make(chan *mcp.ClientSession, 1024)
		b.Cleanup(func() {
			for {
				select {
				case cs := <-pool:
					_ = cs.Close()
				default:
					return
				}
			}
		})
		b.Run(t.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(16)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				// Sessions are kept across the rounds of b.N, so handshakes stay out of the measurement.
				var cs *mcp.ClientSession
				select {
				case cs = <-pool:
				default:
					c := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1.0.0"}, nil)
					var err error
					if cs, err = c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: t.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion}); err != nil {
						b.Error(err)
						return
					}
				}
				defer func() { pool <- cs }()
				for pb.Next() {
					if err := e2eCall(cs, t.tool); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

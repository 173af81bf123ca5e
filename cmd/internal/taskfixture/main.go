// Command taskfixture is the MCP server the tasks scenarios of the official
// conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12, the
// tasks extension io.modelcontextprotocol/tasks, SEP-2663) call through
// Switchboard: .ci/conformance runs it as the upstream of the modern-tasks-*
// runs.
//
// Those scenarios call fixture tools (greet, slow_compute, failing_job,
// protocol_error_job, confirm_delete, multi_input, test_tool_with_task) that
// no available server has; the Go SDK's conformance everything-server lacks
// them. This server has them, and knows nothing about tasks: every tool is an
// ordinary synchronous call, timed so that the gateway's tasks (which it makes
// for tools whose upstream takes none, after a sync window of 500ms by
// default) produce what the scenarios expect. The tools that ask the client
// for input do it the Go SDK's way, by returning input requests (SEP-2322):
// to a 2026-07-28 client that is an input_required result, to an older
// session the SDK sends the elicitation/create requests itself (concurrently
// when there are several) and calls the tool again with the answers.
//
// Usage mirrors the SDK's conformance server: stdio by default,
// -http 127.0.0.1:PORT for streamable HTTP, stateless by default and
// -stateless=false for sessions (the legacy era).
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	httpAddr := flag.String("http", "", "serve streamable HTTP at this address instead of stdio")
	stateless := flag.Bool("stateless", true, "stateless streamable HTTP (false: sessions, the legacy era)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	server := newServer()
	if *httpAddr == "" {
		if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			log.Fatalf("taskfixture: %v", err)
		}
		return
	}
	srv := &http.Server{Addr: *httpAddr, Handler: httpHandler(server, *stateless)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Printf("taskfixture listening at %s (stateless: %t)", *httpAddr, *stateless)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatalf("taskfixture: %v", err)
	}
}

// httpHandler serves server over streamable HTTP, at any path. A 2026-07-28
// call ends with its HTTP request: a client (or gateway) that gives up on the
// request cancels the tool's context, as notifications/cancelled does in a
// session.
func httpHandler(server *mcp.Server, stateless bool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: true})
}

package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envTestServer makes the test binary act as an upstream MCP server instead
// of running tests: a stdio upstream needs a real program, and this one is
// built from an independent MCP implementation (the official Go SDK).
const envTestServer = "SWITCHBOARD_TEST_SERVER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(envTestServer); mode {
	case "":
		os.Exit(m.Run())
	case "sdk":
		var tr mcp.Transport = &mcp.StdioTransport{}
		if os.Getenv(envTestTee) != "" {
			// The suite compares what the gateway reads with what the server wrote, byte for byte.
			tr = &mcp.IOTransport{
				Reader: io.NopCloser(io.TeeReader(os.Stdin, &lineTee{prefix: wireIn})),
				Writer: teeCloser{io.MultiWriter(os.Stdout, &lineTee{prefix: wireOut}), os.Stdout},
			}
		}
		err := newTestServer().Run(context.Background(), tr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "raw":
		os.Exit(runRawServer())
	case "ignore-eof":
		// A server that goes on after its stdin closes (as some do): only a signal ends it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		select {}
	case "parent":
		// A stand-in gateway: it starts an "ignore-eof" child, prints its pid, and waits to be killed.
		c, err := (&CommandTransport{spec: Spec{Name: "orphan", Command: os.Args[0], Env: map[string]string{envTestServer: "ignore-eof"}}}).Connect(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "parent:", err)
			os.Exit(1)
		}
		fmt.Println(c.(*stdioConn).pid)
		select {}
	default:
		fmt.Fprintln(os.Stderr, "unknown test server mode", mode)
		os.Exit(2)
	}
}

// envTestTee makes the "sdk" test server copy every line it reads and writes to stderr, prefixed with wireIn
// or wireOut, where the stdio connection logs it.
const envTestTee = "SWITCHBOARD_TEST_TEE"

const (
	wireIn  = "wire-in: "
	wireOut = "wire-out: "
)

// lineTee writes each complete line written to it to stderr, after prefix.
type lineTee struct {
	prefix string
	buf    []byte
}

func (w *lineTee) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		fmt.Fprintf(os.Stderr, "%s%s\n", w.prefix, w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// teeCloser writes to w and closes c.
type teeCloser struct {
	io.Writer
	c io.Closer
}

func (t teeCloser) Close() error { return t.c.Close() }

type echoIn struct {
	Text string `json:"text"`
}

type progressIn struct {
	Steps int `json:"steps"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

type empty struct{}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// testHooks lets an in-process test observe the "block" tool.
type testHooks struct {
	started   chan struct{} // receives when block starts
	cancelled chan struct{} // receives when block's request is cancelled
}

// newTestServer builds the SDK server used over stdio and HTTP.
func newTestServer() *mcp.Server { return newTestServerWith(nil) }

// newTestServerWith is newTestServer with hooks for the block tool (nil:
// block reports its cancellation on stderr, for a stdio child).
func newTestServerWith(hooks *testHooks) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		// What the request told the server about its client: per request
		// in the modern era (_meta), from initialize in the legacy one.
		caps, _ := json.Marshal(req.ClientCapabilities())
		name := ""
		if info := req.ClientInfo(); info != nil {
			name = info.Name
		}
		return textResult(fmt.Sprintf("version=%s client=%s caps=%s", req.ProtocolVersion(), name, caps)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		if hooks != nil {
			hooks.started <- struct{}{}
		} else {
			fmt.Fprintln(os.Stderr, "block: started")
		}
		<-ctx.Done()
		if hooks != nil {
			hooks.cancelled <- struct{}{}
		} else {
			fmt.Fprintln(os.Stderr, "block: cancelled")
		}
		return nil, nil, ctx.Err()
	})
	s.AddPrompt(&mcp.Prompt{Name: "grüße"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hallo"}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://résumé", Name: "cv"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "cv text"}}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return textResult("echo: " + in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps)}); err != nil {
				return nil, nil, err
			}
		}
		return textResult("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "junk"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		// Nothing else writes to stdout while a handler runs, so these
		// lines cannot interleave with the SDK's own output.
		fmt.Fprintln(os.Stdout, "this is not JSON")
		fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","method":"x","params":"`+strings.Repeat("a", 8192)+`"}`)
		fmt.Fprintln(os.Stderr, "stderr-marker from the test server")
		return textResult("after junk"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(ctx context.Context, req *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return textResult(strings.Repeat("b", in.Bytes)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 roots is still the simplest server→client request in 2025-11-25, the version under test.
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var names []string
		for _, r := range res.Roots {
			names = append(names, r.Name)
		}
		return textResult("roots: " + strings.Join(names, ",")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "addtool"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		// Triggers notifications/tools/list_changed, which the SDK sends
		// unrelated to any request: on the standalone GET stream.
		mcp.AddTool(s, &mcp.Tool{Name: "added"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			return textResult("added"), nil, nil
		})
		return textResult("ok"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hangup"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		// SEP-1699: the server closes the POST's SSE stream before the
		// response; the client must resume with GET and Last-Event-ID.
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 5 * time.Millisecond})
		}
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i)})
		}
		return textResult("resumed"), nil, nil
	})
	return s
}

// runRawServer is a hand-written legacy stdio server for handshake corner
// cases, driven by environment variables:
// RAW_VERSION: the protocolVersion to answer; RAW_PING=1: send a ping and a
// log notification before answering initialize; RAW_EARLY: what to do with a
// request that comes before initialize (such as the server/discover probe):
// "" answers it like any other, "silent" never answers, "late" answers it
// only after the initialize response, "exit" exits with status 1; RAW_BIG:
// the size of the answer to the method "big". The methods "noted" and "asks"
// are answered after a progress notification or a ping of the server's own,
// in the same write.
func runRawServer() int {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) {
		out.WriteString(s + "\n")
		out.Flush()
	}
	early := os.Getenv("RAW_EARLY")
	initialized := false
	var held []json.RawMessage // ids of early requests, for "late"
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "raw server: bad input:", err)
			return 1
		}
		switch {
		case !initialized && m.ID != nil && m.Method != "initialize" && early != "":
			switch early {
			case "exit":
				fmt.Fprintln(os.Stderr, "raw server: request before initialize; exiting")
				return 1
			case "late":
				held = append(held, m.ID)
			}
		case m.Method == "initialize":
			initialized = true
			if os.Getenv("RAW_PING") == "1" {
				send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"early log"}}`)
				send(`{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
				if !in.Scan() || !strings.Contains(in.Text(), `"result":{}`) {
					fmt.Fprintln(os.Stderr, "raw server: no ping answer")
					return 1
				}
			}
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{},"serverInfo":{"name":"raw","version":"0"}}}`, m.ID, os.Getenv("RAW_VERSION")))
			for _, id := range held {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`, id))
			}
		case m.ID != nil && m.Method == "big":
			// RAW_BIG: the size of the answer to "big", padded to be over a small message limit.
			n, _ := strconv.Atoi(os.Getenv("RAW_BIG"))
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"pad":%q}}`, m.ID, strings.Repeat("x", n)))
		case m.ID != nil && (m.Method == "noted" || m.Method == "asks"):
			// A notification, or a request of the server's own, and then the answer, in one write: the reader
			// finds both in one buffer.
			first := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
			if m.Method == "asks" {
				first = `{"jsonrpc":"2.0","id":"s1","method":"ping"}`
			}
			out.WriteString(first + "\n")
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"method":%q}}`, m.ID, m.Method))
		case m.ID != nil && m.Method != "":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"method":%q}}`, m.ID, m.Method))
		}
	}
	return 0
}

// logRecord is one captured log record with its attributes flattened.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// logCapture is a slog.Handler that records everything for assertions.
type logCapture struct {
	mu      *sync.Mutex
	recs    *[]logRecord
	changed chan struct{} // receives (non-blocking) after each record
	attrs   []slog.Attr
}

func newLogCapture() *logCapture {
	return &logCapture{mu: new(sync.Mutex), recs: new([]logRecord), changed: make(chan struct{}, 1)}
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
	return nil
}

func (h *logCapture) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// find returns the first record matching f.
func (h *logCapture) find(f func(logRecord) bool) (logRecord, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range *h.recs {
		if f(r) {
			return r, true
		}
	}
	return logRecord{}, false
}

// waitFor waits until a record matches f (or the test's context ends).
func (h *logCapture) waitFor(t *testing.T, f func(logRecord) bool) logRecord {
	t.Helper()
	ctx := waitCtx(t)
	for {
		if r, ok := h.find(f); ok {
			return r
		}
		select {
		case <-h.changed:
		case <-ctx.Done():
			t.Fatal("log record never appeared")
		}
	}
}

// has reports whether any record's message contains s.
func (h *logCapture) has(s string) bool {
	_, ok := h.find(func(r logRecord) bool { return strings.Contains(r.Msg, s) })
	return ok
}

// waitCtx bounds a wait that should end promptly, so that a bug fails the
// test instead of hanging it. It is a safety net, not a timing assertion.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// stdioClient drives the stdio front end line by line, as a desktop client that launched the gateway would.
type stdioClient struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string // what the gateway wrote, line by line; closed when its stdout ends
	done  chan error
}

// startStdio serves the router's front end over pipes until the test ends (or close).
func startStdio(t *testing.T, r *routing.Router) *stdioClient {
	t.Helper()
	return startStdioWith(t, r, gateway.Options{})
}

// startStdioWith is startStdio with the front end's options.
func startStdioWith(t *testing.T, r *routing.Router, opts gateway.Options) *stdioClient {
	t.Helper()
	opts.Logger = testLogger()
	srv := gateway.New(r, opts)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(ctxGuard(t))
	c := &stdioClient{t: t, in: inW, lines: make(chan string, 64), done: make(chan error, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	go func() { c.done <- srv.ServeStdio(ctx, inR, outW); outW.Close() }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-c.done
		for range c.lines { // unblock the reader, then wait for it
		}
		<-read
	})
	return c
}

// send writes one line.
func (c *stdioClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one line of output; the wait is bounded by guard.
func (c *stdioClient) next() string {
	c.t.Helper()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("no more output: the gateway's stdout ended")
		}
		return line
	case <-timer.C:
		c.t.Fatalf("no output within %s", guard)
		return ""
	}
}

// answer reads lines until the answer to the request with the id (its JSON form), and returns it with the lines
// read before it.
func (c *stdioClient) answer(id string) (rpcMsg, []rpcMsg) {
	c.t.Helper()
	var before []rpcMsg
	for {
		m := decodeMsg(c.t, []byte(c.next()))
		if m.Method == "" && string(m.ID) == id {
			return m, before
		}
		before = append(before, m)
	}
}

// initialize starts the session with the given version.
func (c *stdioClient) initialize(version string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if got := c.next(); !strings.Contains(got, `"id":1,"result"`) || !strings.Contains(got, version) {
		c.t.Fatalf("initialize answer: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// close closes stdin, which is how a stdio client shuts its server down, and returns what ServeStdio returned.
func (c *stdioClient) close() error {
	c.in.Close()
	err := <-c.done
	c.done <- err // for the cleanup
	return err
}

// TestStdioFrontEnd drives the stdio front end line by line: initialize, a call, a batch (2025-03-26 only, answered
// as one array, and bounded like HTTP's), malformed lines, and a batch refused in a later version.
func TestStdioFrontEnd(t *testing.T) {
	for _, tc := range []struct {
		version string
		batchOK bool
	}{{"2025-03-26", true}, {"2025-11-25", false}} {
		t.Run(tc.version, func(t *testing.T) {
			h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
			c := startStdio(t, h.r)
			c.initialize(tc.version)
			c.send(`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}`)
			if got := c.next(); !strings.Contains(got, `"id":"two"`) || !strings.Contains(got, "hi") {
				t.Fatalf("call answer: %s", got)
			}
			c.send(`{not json`)
			if got := c.next(); !strings.Contains(got, `-32700`) {
				t.Fatalf("malformed line: %s", got)
			}
			c.send(`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"b"}}}]`)
			got := c.next()
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
				// A batch over the bound is refused whole, before anything in it runs.
				parts := make([]string, 101)
				for i := range parts {
					parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)
				}
				c.send("[" + strings.Join(parts, ",") + "]")
				if got := c.next(); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "at most 100") || strings.Contains(got, `"result"`) {
					t.Fatalf("a batch of 101: %s, want one -32600 naming the limit", got)
				}
			}
			if err := c.close(); err != nil {
				t.Fatalf("ServeStdio: %v", err)
			}
		})
	}
}

// TestStdioShutdown: ServeStdio returns when its context ends even while the client keeps stdin open and says
// nothing (a SIGTERM to `switchboard stdio`): with a pipe the runtime polls, its pending read is interrupted and
// waited for; with a reader that cannot be interrupted, it returns without waiting for it.
func TestStdioShutdown(t *testing.T) {
	h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	srv := gateway.New(h.r, gateway.Options{Logger: testLogger()})
	for _, tc := range []struct {
		name string
		pipe func(t *testing.T) (io.Reader, io.Closer)
	}{
		{"os pipe", func(t *testing.T) (io.Reader, io.Closer) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r, w
		}},
		{"io pipe", func(*testing.T) (io.Reader, io.Closer) {
			r, w := io.Pipe()
			return r, w
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, writer := tc.pipe(t)
			defer writer.Close() // the client holds stdin open throughout
			out := &lockedBuffer{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.ServeStdio(ctx, in, out) }()
			if _, err := io.WriteString(writer.(io.Writer), `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the answer to ping", func() bool { return strings.Contains(out.String(), `"id":1`) })
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeStdio after its context ended: %v", err)
				}
			case <-time.After(guard):
				t.Fatal("ServeStdio did not return when its context ended")
			}
		})
	}
}

// lockedBuffer is a buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package upstream

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// preemptRecorder is a Preempter that records what it is offered and takes it when take is set.
type preemptRecorder struct {
	take    bool
	offered chan Incoming
}

func (r *preemptRecorder) Preempt(in Incoming) bool {
	r.offered <- in
	return r.take
}

var _ Preempter = (*preemptRecorder)(nil)

// TestStdioPreempt: a stdio connection offers the child's responses to its Preempter on the reader, but never
// one that would overtake a message read before it and not yet routed (a progress notification, a request of
// the child's own), and never anything but a response; what the Preempter declines goes to Read.
func TestStdioPreempt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string // "noted" and "asks" send a notification or a ping first, in the same write
		take   bool
		before string // the method of what Read returns before the answer; "" for nothing
		via    string // how the answer arrives: "preempter" or "read"
	}{
		{name: "an answer alone is taken on the reader", method: "plain", take: true, via: "preempter"},
		{name: "a declined answer goes to Read", method: "plain", take: false, via: "read"},
		{name: "an answer after a progress notification waits for it", method: "noted", take: true, before: "notifications/progress", via: "read"},
		{name: "an answer after the child's own request waits for it", method: "asks", take: true, before: "ping", via: "read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Name: "raw", Command: os.Args[0], Env: map[string]string{envTestServer: "raw", "RAW_VERSION": "2025-11-25"},
				Logger: slog.New(newLogCapture()), ShutdownGrace: time.Second}
			conn := mustDial(t, spec, ClientHello{})
			defer conn.Close()
			rec := &preemptRecorder{take: tc.take, offered: make(chan Incoming, 4)}
			conn.Preempt(rec)
			if err := conn.Write(waitCtx(t), request(1, tc.method, "")); err != nil {
				t.Fatal(err)
			}
			ctx := waitCtx(t)
			if tc.before != "" {
				in, err := conn.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if in.Msg.Method() != tc.before {
					t.Fatalf("Read = %s, want %s first", in.Msg.Raw(), tc.before)
				}
				// Not calling Read again is holding that message: wait until the answer, read after it, has
				// queued instead of being taken out of turn.
				waitReadQueue(t, conn.Connection.(*stdioConn), 1)
			}
			var answer Incoming
			if tc.via == "preempter" {
				select {
				case answer = <-rec.offered:
				case <-ctx.Done():
					t.Fatal("the answer was never offered to the preempter")
				}
			} else {
				in, err := conn.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				answer = in
				if !tc.take { // the declined answer was offered first
					if got := describeOffered(rec); got != fmt.Sprintf("[%s]", answer.Msg.Raw()) {
						t.Errorf("offered %s, want the answer once", got)
					}
				}
			}
			if answer.Msg.Kind() != jsonrpc.KindResponse || string(answer.Msg.ID()) != "1" {
				t.Fatalf("answer = %s, want the response to 1", answer.Msg.Raw())
			}
			if tc.take {
				if got := describeOffered(rec); got != "[]" {
					t.Errorf("also offered %s; only the answer, and only in turn, may be", got)
				}
			}
		})
	}
}

// waitReadQueue waits until c's read queue holds n messages, failing if it never does.
func waitReadQueue(t *testing.T, c *stdioConn, n int) {
	t.Helper()
	ctx := waitCtx(t)
	for len(c.queue) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("queue holds %d messages, want %d", len(c.queue), n)
		case <-time.After(time.Millisecond):
		}
	}
}

// describeOffered drains what rec was offered, as raw messages.
func describeOffered(rec *preemptRecorder) string {
	var out []string
	for {
		select {
		case in := <-rec.offered:
			out = append(out, string(in.Msg.Raw()))
		default:
			return fmt.Sprint(out)
		}
	}
}

package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// discardResponse is a ResponseWriter that drops what is written but supports what sseWriter asks of the
// connection (flush, write deadline), so the benchmark measures the gateway's framing and bookkeeping only.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header                { return d.h }
func (d *discardResponse) Write(p []byte) (int, error)        { return len(p), nil }
func (d *discardResponse) WriteHeader(int)                    {}
func (d *discardResponse) FlushError() error                  { return nil }
func (d *discardResponse) SetWriteDeadline(t time.Time) error { return nil }

// BenchmarkSSEWriterEvent is one message written to a client's event stream by the gateway's writer: event id,
// SSE framing, write deadline, flush.
func BenchmarkSSEWriterEvent(b *testing.B) {
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"small", []byte(`{"jsonrpc":"2.0","id":"req-12345","result":{"content":[{"type":"text","text":"hello from switchboard-bench"}]}}`)},
		{"16KB", []byte(`{"jsonrpc":"2.0","id":"req-12345","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 16<<10) + `"}]}}`)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := &discardResponse{h: http.Header{}}
			sw := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: 30 * time.Second}
			b.SetBytes(int64(len(tc.msg)))
			b.ReportAllocs()
			seq := int64(0)
			for b.Loop() {
				seq++
				if err := sw.event(eventID(3, seq), tc.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package sse

import (
	"bytes"
	"strings"
	"testing"
)

// Benchmarks of the SSE frames on the hot path, by message size (sse_test.go has one 1.8 KB case of each): every message the gateway streams to a client is written with
// AppendEvent, and every message from a streamable HTTP upstream that answers with a stream is read with Reader.

var (
	benchSmall = []byte(`{"jsonrpc":"2.0","id":"req-12345","result":{"content":[{"type":"text","text":"hello from switchboard-bench"}]}}`)
	benchLarge = []byte(`{"jsonrpc":"2.0","id":"req-12345","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 16<<10) + `"}]}}`)
	// benchLines is pretty-printed JSON: one data line per line.
	benchLines = []byte("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"result\": {\n    \"content\": []\n  }\n}")
)

func BenchmarkAppendEventSizes(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{{"small", benchSmall}, {"16KB", benchLarge}, {"multiline", benchLines}} {
		b.Run(tc.name, func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendEvent(buf[:0], Event{ID: "12_345", Name: "message", Data: tc.data})
			}
		})
	}
}

// repeatReader replays one encoded stream forever.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

func BenchmarkReaderNextSizes(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{{"small", benchSmall}, {"16KB", benchLarge}} {
		b.Run(tc.name, func(b *testing.B) {
			frame := AppendEvent(nil, Event{ID: "12_345", Name: "message", Data: tc.data})
			r := NewReader(&repeatReader{data: frame}, 1<<20)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				ev, err := r.Next()
				if err != nil || !bytes.Equal(ev.Data, tc.data) {
					b.Fatalf("Next: %v", err)
				}
			}
		})
	}
}

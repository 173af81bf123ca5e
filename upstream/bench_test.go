package upstream

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// benchRT answers every request POST with the response to it, without a socket, so that what is measured is
// the connection's own work per request.
type benchRT struct{ contentType string }

func (rt benchRT) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	m, err := jsonrpc.Parse(bytes.TrimSpace(body))
	if err != nil || m.Kind() != jsonrpc.KindRequest {
		return fakeResponse(req, http.StatusAccepted, "", strings.NewReader("")), nil
	}
	answer := `{"jsonrpc":"2.0","id":` + string(m.ID()) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`
	if rt.contentType == mediaEventStream {
		answer = "event: message\ndata: " + answer + "\n\n"
	}
	return fakeResponse(req, http.StatusOK, rt.contentType, strings.NewReader(answer)), nil
}

func benchTransport(b *testing.B, contentType string) *HTTPTransport {
	spec := Spec{Name: "bench", URL: "http://upstream.test/mcp", HTTPClient: &http.Client{Transport: benchRT{contentType}}}
	u, err := url.Parse(spec.URL)
	if err != nil {
		b.Fatal(err)
	}
	return newHTTPTransport(spec, u)
}

func benchRoundTrips(b *testing.B, c Connection) {
	b.ReportAllocs()
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		id := strconv.AppendInt(nil, int64(i+1), 10)
		if err := c.Write(ctx, mustParse(jsonrpc.AppendRequest(nil, id, "tools/call", []byte(`{"name":"x"}`)))); err != nil {
			b.Fatal(err)
		}
		if in, err := c.Read(ctx); err != nil || !bytes.Equal(in.Msg.ID(), id) {
			b.Fatalf("Read: %s, %v", in.Msg.Raw(), err)
		}
	}
}

// BenchmarkRoundTrip measures one request and its answer on each HTTP connection.
func BenchmarkRoundTrip(b *testing.B) {
	for _, ct := range []string{mediaJSON, mediaEventStream} {
		b.Run("stateless/"+ct, func(b *testing.B) {
			meta, err := newRequestMeta(ClientHello{})
			if err != nil {
				b.Fatal(err)
			}
			sc := benchTransport(b, ct).connectStateless(b.Context(), meta)
			defer sc.Close()
			benchRoundTrips(b, sc)
		})
		b.Run("streamable/"+ct, func(b *testing.B) {
			c, err := benchTransport(b, ct).Connect(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			benchRoundTrips(b, c)
		})
	}
}

// BenchmarkStdioEcho measures our side of the stdio path: requests written to a child that echoes every line
// back (cat), and read, by 1 and by 32 concurrent callers (a shared stdio upstream under load, where writes
// queue and go out together).
func BenchmarkStdioEcho(b *testing.B) {
	for _, callers := range []int{1, 32} {
		perProc := max(1, callers/runtime.GOMAXPROCS(0))
		b.Run("callers="+strconv.Itoa(perProc*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			tr, err := NewTransport(Spec{Name: "cat", Command: "cat", ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			c, err := tr.Connect(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var waiting sync.Map // id → chan struct{}
			go func() {
				for {
					in, err := c.Read(context.Background())
					if err != nil {
						return
					}
					if ch, ok := waiting.LoadAndDelete(string(in.Msg.ID())); ok {
						ch.(chan struct{}) <- struct{}{}
					}
				}
			}()
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(perProc)
			b.RunParallel(func(pb *testing.PB) {
				ch := make(chan struct{}, 1)
				for pb.Next() {
					id := next.Add(1)
					waiting.Store(strconv.FormatInt(id, 10), ch)
					m := mustParse(jsonrpc.AppendRequest(nil, strconv.AppendInt(nil, id, 10), "tools/call",
						[]byte(`{"name":"echo","arguments":{"text":"hello from switchboard-bench"}}`)))
					if err := c.Write(context.Background(), m); err != nil {
						b.Error(err)
						return
					}
					<-ch
				}
			})
		})
	}
}

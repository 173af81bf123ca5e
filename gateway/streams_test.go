package gateway_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// streamBackend runs gateway replicas over one way of keeping streams: two replicas share one session store and
// one event log, so a stream may be resumed on the other replica; the in-memory log has one replica only.
type streamBackend struct {
	name    string
	shared  bool
	replica func(t *testing.T) func() *harness
}

func streamBackends() []streamBackend {
	over := func(store interface {
		state.SessionStore
		state.Bus
		state.EventLog
	}, t *testing.T) func() *harness {
		secret := []byte(strings.Repeat("k", 32))
		markers := markerSink(t)
		return func() *harness {
			return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store},
				gateway.Options{Events: store, KeepAlive: time.Second}, stdioUpstream(t, "alpha", routing.PerClient, markers))
		}
	}
	return []streamBackend{
		{name: "memory", replica: func(t *testing.T) func() *harness {
			h := startGateway(t, routing.Options{}, gateway.Options{KeepAlive: time.Second}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
			return func() *harness { return h }
		}},
		{name: "shared/state.Memory", shared: true, replica: func(t *testing.T) func() *harness {
			store := state.NewMemory()
			t.Cleanup(store.Shutdown)
			return over(store, t)
		}},
		{name: "shared/miniredis", shared: true, replica: func(t *testing.T) func() *harness {
			mr := miniredis.RunT(t)
			client := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: 1, ContextTimeoutEnabled: true})
			store := state.NewRedis(client, "streams:")
			t.Cleanup(func() { store.Shutdown(); client.Close() })
			return over(store, t)
		}},
	}
}

// TestStreamResumption runs the same resumption behaviour against every way of keeping streams: a dropped POST
// stream resumes with the rest only; a resumption takes over a stream whose old connection is still held, which
// then stops writing; a second reader of the standalone stream is refused with 409 until the first leaves. With
// the shared log, each is also checked across replicas (A produces, B resumes).
func TestStreamResumption(t *testing.T) {
	cases := []struct {
		name  string
		other bool // the second connection goes to the other replica
		run   func(t *testing.T, a, b *harness, session string)
	}{
		{"resume after a drop", false, resumeAfterDrop},
		{"resume after a drop, other replica", true, resumeAfterDrop},
		{"takeover of a held stream", false, takeover},
		{"takeover of a held stream, other replica", true, takeover},
		{"second standalone reader refused", false, standaloneConflict},
		{"second standalone reader refused, other replica", true, standaloneConflict},
	}
	for _, be := range streamBackends() {
		t.Run(be.name, func(t *testing.T) {
			replica := be.replica(t)
			a := replica()
			b := a
			if be.shared {
				b = replica()
			}
			for _, tc := range cases {
				if tc.other && !be.shared {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					c := a.raw(t)
					c.initialize("2025-11-25")
					other := a
					if tc.other {
						other = b
					}
					tc.run(t, a, other, c.session)
				})
			}
		})
	}
}

func slowCall(tag string) string {
	return `{"jsonrpc":"2.0","id":"` + tag + `","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"` + tag + `","ms":1200},"_meta":{"progressToken":"p"}}}`
}

func resumeAfterDrop(t *testing.T, a, b *harness, session string) {
	lastID := dropStream(t, a.url, session, slowCall("drop"), `"progress"`)
	if lastID == "" {
		t.Fatal("no event id before the progress notification")
	}
	rest := resumeStream(t, b.url, session, lastID)
	if !strings.Contains(rest, `"id":"drop"`) || !strings.Contains(rest, "slow done drop") {
		t.Fatalf("the resumed stream lacks the answer:\n%s", rest)
	}
	if strings.Contains(rest, `"progress":1`) {
		t.Fatalf("the resumed stream replays what the client had seen:\n%s", rest)
	}
}

func takeover(t *testing.T, a, b *harness, session string) {
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, a.url, strings.NewReader(slowCall("take")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %v %v", resp, err)
	}
	defer resp.Body.Close() // held open: the server still writes this stream when the GET arrives
	br := bufio.NewReader(resp.Body)
	last := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the POST stream: %v", err)
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			last = id
		}
		if strings.Contains(line, `"progress"`) {
			break
		}
	}
	rest := resumeStream(t, b.url, session, last)
	if !strings.Contains(rest, `"id":"take"`) || !strings.Contains(rest, "slow done take") {
		t.Fatalf("the stream taken over lacks the answer:\n%s", rest)
	}
	// The old connection ends, without the answer: one connection writes a stream at a time.
	old, _ := io.ReadAll(br)
	if strings.Contains(string(old), "slow done take") {
		t.Fatalf("the answer went to the old connection too:\n%s", old)
	}
}

func standaloneConflict(t *testing.T, a, b *harness, session string) {
	get := func(h *harness) *http.Response {
		req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, h.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := get(a)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first standalone GET: HTTP %d", first.StatusCode)
	}
	second := get(b)
	second.Body.Close()
	if second.StatusCode != http.StatusConflict {
		t.Fatalf("second standalone GET while the first reads: HTTP %d, want 409", second.StatusCode)
	}
	first.Body.Close()
	waitFor(t, "the standalone stream free again once its reader left", func() bool {
		resp := get(b)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

package routing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/state"
)

// flakyStore is a memory store whose Create fails while down, as Redis does during an outage.
type flakyStore struct {
	*state.Memory
	down atomic.Bool
}

func (f *flakyStore) Create(ctx context.Context, rec state.SessionRecord) error {
	if f.down.Load() {
		return fmt.Errorf("%w: connection refused", state.ErrUnavailable)
	}
	return f.Memory.Create(ctx, rec)
}

// TestSessionsSharedAfterAnOutage: a session started while the store was away is written to it once it is back,
// with what it holds by then, so the other replicas can serve it.
func TestSessionsSharedAfterAnOutage(t *testing.T) {
	fs := &flakyStore{Memory: state.NewMemory()}
	t.Cleanup(fs.Shutdown)
	r := startRouter(t, Options{Store: fs, Bus: fs}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: plainUpstream(), Kind: "stdio"})
	fs.down.Store(true)
	s := r.session(defaultClientCaps)
	defer s.Close()
	s.mu.Lock()
	s.logLevel = levelIndex("debug")
	s.mu.Unlock()
	r.shareLate() // still down: nothing written, nothing lost
	if _, err := fs.Get(t.Context(), s.ID()); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("record during the outage: %v, want none", err)
	}
	fs.down.Store(false)
	r.shareLate()
	rec, err := fs.Get(t.Context(), s.ID())
	if err != nil || rec.LogLevel != "debug" || rec.ProtocolVersion != "2025-11-25" {
		t.Fatalf("record after the outage: %+v, %v; want the session with its level", rec, err)
	}
	if s.record.unshared.Load() {
		t.Error("the session is still marked unshared")
	}
}

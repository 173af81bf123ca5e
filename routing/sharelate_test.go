package routing

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestSessionsSharedWhenTheStoreReturns (issue 31, item 13): a session started while the store was away is
// written within a second of the store's return (another replica answers 404 for it until then), not at the
// janitor's next round, a minute later with the default idle timeout; while the store stays away, it is tried
// once a second, and nothing is lost.
func TestSessionsSharedWhenTheStoreReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &flakyStore{Memory: state.NewMemory()}
		defer fs.Shutdown()
		r := startRouter(t, Options{Store: fs, Bus: fs}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: plainUpstream(), Kind: "stdio"})
		if every := r.janitorInterval(); every < time.Minute {
			t.Fatalf("the janitor runs every %v: the test proves nothing", every)
		}
		fs.down.Store(true)
		s := r.session(defaultClientCaps)
		defer s.Close()
		time.Sleep(10 * time.Second) // the store stays away
		synctest.Wait()
		if _, err := fs.Get(t.Context(), s.ID()); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("record during the outage: %v, want none", err)
		}
		fs.down.Store(false)
		time.Sleep(lateRetry)
		synctest.Wait()
		if _, err := fs.Get(t.Context(), s.ID()); err != nil {
			t.Fatalf("record a second after the store came back: %v, want the session", err)
		}
		if s.record.unshared.Load() {
			t.Error("the session is still marked unshared")
		}
	})
}

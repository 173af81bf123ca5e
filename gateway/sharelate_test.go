package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestReplicaSessionAfterRedisReturns (issue 31, item 13): a session initialized on replica A while Redis is down
// is written to it as soon as Redis is back, so that replica B serves it then, not after A's janitor runs again (a
// minute later with the default idle timeout, this test's guard being half that).
func TestReplicaSessionAfterRedisReturns(t *testing.T) {
	rp := startRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	replica := func() *harness {
		client := redis.NewClient(&redis.Options{Addr: rp.addr, DialTimeout: 300 * time.Millisecond, DialerRetries: 1, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "late:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store},
			gateway.Options{Ready: store.Ping}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	}
	a, b := replica(), replica()

	rp.stop()
	ca := a.raw(t)
	init := ca.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	if init.status != http.StatusOK || init.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize on A while Redis is down: HTTP %d %s", init.status, init.body)
	}
	cb := b.raw(t)
	cb.session, cb.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"

	rp.start()
	waitFor(t, "B to serve the session A made while Redis was down", func() bool {
		return cb.do(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil).status == http.StatusOK
	})
}

package routing

import (
	"context"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// A 2026-07-28 client has no initialize to wait in: its first request may be a tools/list sent the moment the
// gateway's process starts (the TS SDK v2 client and Mastra list first), and server/discover, its probe, must be
// answered at once (the AI SDK gives up on it after a second). So the probe is answered with what is known, and
// the requests that read the catalog wait for the start instead, as a legacy client's initialize does.

// WaitStart holds a 2026-07-28 request that reads the catalog while the router starts, until every upstream has
// had its first try (Ready): the first catalog a client sees then holds every upstream that is going to come up.
// The hold is bounded by window, counted from the start (Run), so that an upstream slow to come up holds no
// client for longer than that after the start, and it ends with ctx. Every method is held but server/discover
// (answered with what is known) and subscriptions/listen (its list changes tell of what comes later). It returns
// ctx's error when ctx ended first.
func (r *Router) WaitStart(ctx context.Context, method string, window time.Duration) error {
	switch method {
	case protocol.MethodServerDiscover, protocol.MethodSubscriptionsListen:
		return nil
	}
	r.mu.Lock()
	ready, ch, since := r.ready, r.readyCh, r.runSince
	r.mu.Unlock()
	if ready {
		return nil
	}
	if since.IsZero() {
		since = time.Now() // not running yet: the window starts with the request
	}
	left := time.Until(since.Add(window))
	if left <= 0 {
		return nil
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

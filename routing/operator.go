package routing

// The router's operator surface: what the front end asks of it besides sessions (readiness and the start's
// window, health, what the catalog offers and whether host limits reject a name). The request path is in
// routersessions.go and session.go; each feature's own component answers through the methods promoted from it.

import (
	"context"
	"slices"
	"strings"
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

// Offers reports whether the catalog lists a tool (or, with prompt, a prompt) by this exposed name; the
// meta-tools of search mode count as listed. The front end names in its metrics only what is listed, so that
// clients cannot mint label values.
func (r *Router) Offers(prompt bool, name string) bool {
	c := r.current()
	if c == nil {
		return false
	}
	if prompt {
		_, ok := c.prompts[name]
		return ok
	}
	if _, ok := c.tools[name]; ok {
		return true
	}
	return name == toolSearch || name == toolCall
}

// OffersTasks reports whether the gateway offers 2026-07-28 clients the tasks extension: it makes tasks itself,
// or an upstream does.
func (r *Router) OffersTasks() bool { return r.tasks.enabled() || r.tasks.upstreamTasks() }

// RejectedNames lists the exposed tool names of the current catalog that a host in Options.Hosts would reject:
// the host's prefix and the name together are longer than its limit.
func (r *Router) RejectedNames() []RejectedName {
	var out []RejectedName
	for _, h := range r.opts.Hosts {
		for name := range r.cat.Load().tools {
			if n := len(h.Prefix) + len(name); n > h.MaxLength {
				out = append(out, RejectedName{Host: h.Name, Name: name, Length: n, Limit: h.MaxLength})
			}
		}
	}
	slices.SortFunc(out, func(a, b RejectedName) int {
		return strings.Compare(a.Host+"\x00"+a.Name, b.Host+"\x00"+b.Name)
	})
	return out
}

// Status reports every upstream's health, in configuration order.
func (r *Router) Status() []UpstreamStatus {
	out := make([]UpstreamStatus, 0, len(r.upstreams()))
	for _, up := range r.upstreams() {
		out = append(out, up.status())
	}
	return out
}

// Conflicts lists the names the catalog could not expose because they collide. It does not catch up
// (catchUp): /readyz reads it, polled during start, and a merge per poll would undo the start's one merge.
func (r *Router) Conflicts() []string { return r.cat.Load().conflicts }

// EndpointNames lists the endpoints configured now, in configuration order.
func (r *Router) EndpointNames() []string {
	sh := r.shape.Load()
	names := make([]string, 0, len(sh.Endpoints))
	for _, e := range sh.Endpoints {
		names = append(names, e.Name)
	}
	return names
}

// HasEndpoint reports whether an endpoint of that name is configured now.
func (r *Router) HasEndpoint(name string) bool { return r.shape.Load().endpoint(name) != nil }

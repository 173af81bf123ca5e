package routing

import (
	"context"
	"encoding/json"
)

// A stateless (2026-07-28) upstream has no notifications outside requests: list changes and resource updates
// come on subscriptions/listen streams (basic/patterns/subscriptions.mdx). The gateway holds two on a stateless
// upstream's main link: one for list changes, for the catalog, and one for the resources its clients subscribed
// to, legacy clients through resources/subscribe and stateless ones through their own subscriptions/listen.

// listenChanges holds a subscriptions/listen request open on a stateless upstream's main link, so that its list
// changes reach the catalog as a legacy upstream's notifications would. It returns when the connection ends (or
// the upstream ends the subscription).
func listenChanges(l *link) {
	params := []byte(`{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}`)
	if _, err := l.request(l.ctx, "subscriptions/listen", params); err != nil && l.ctx.Err() == nil {
		l.log.Debug("list-change subscription ended", "err", err)
	}
}

// relisten replaces the resource subscription of a stateless upstream with one for the URIs subscribed now: a
// listen request's filter cannot change, so a changed set means a new request (and the old one's stream closed,
// which is its cancellation).
func (ss *sharedSubs) relisten() {
	ss.up.mu.Lock()
	if ss.listen != nil {
		ss.listen()
		ss.listen = nil
	}
	uris := sortedKeys(ss.count)
	l := ss.up.main
	if len(uris) == 0 || l == nil || l.ctx == nil {
		ss.up.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(l.ctx)
	ss.listen = cancel
	ss.up.mu.Unlock()
	filter, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}})
	l.goWork(func() { // ends with the next relisten, the link, or the upstream ending it
		if _, err := l.request(ctx, "subscriptions/listen", filter); err != nil && ctx.Err() == nil {
			l.log.Debug("resource subscription ended", "err", err)
		}
	})
}

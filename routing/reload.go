package routing

import (
	"fmt"
	"sync"
)

// upstreamSet is the configured upstreams, replaced whole on reload so readers need no lock.
type upstreamSet struct {
	list   []*upstreamServer
	byName map[string]*upstreamServer
}

// newSet builds a set from configurations, reusing the upstreams of prev whose fingerprint is unchanged.
func (r *Router) newSet(cfgs []UpstreamConfig, prev *upstreamSet) (*upstreamSet, error) {
	set := &upstreamSet{byName: map[string]*upstreamServer{}}
	for _, c := range cfgs {
		if c.Transport == nil {
			return nil, fmt.Errorf("upstream %q: no transport", c.Name)
		}
		if _, dup := set.byName[c.Name]; dup {
			return nil, fmt.Errorf("upstream %q is configured twice", c.Name)
		}
		if c.UserGrants != nil && r.opts.Connector == nil {
			return nil, fmt.Errorf("upstream %q: %w", c.Name, errNoConnector)
		}
		if prev != nil {
			if old := prev.byName[c.Name]; old != nil && old.cfg.Fingerprint == c.Fingerprint && c.Fingerprint != "" {
				set.list = append(set.list, old)
				set.byName[c.Name] = old
				continue
			}
		}
		up := &upstreamServer{cfg: c, r: r, transport: c.Transport, inflight: r.inflight.of(c.Name), kick: make(chan struct{}, 1), triedCh: make(chan struct{})}
		up.subs.up, up.shadows.up = up, up
		up.newMainLink()
		set.list = append(set.list, up)
		set.byName[c.Name] = up
	}
	return set, nil
}

// ReloadResult says what a Reconfigure changed.
type ReloadResult struct {
	Added, Removed, Replaced, Kept []string
	// RestartNeeded names the changed settings a reload read but did not apply; the caller that read the file
	// fills it (Reconfigure knows only upstreams).
	RestartNeeded []string `json:",omitempty"`
	// Problems are parts of the file a reload could not apply while it applied the rest, each with why; the
	// running ones stay (a lock file that cannot be read keeps the pins it replaced).
	Problems []string `json:",omitempty"`
}

// Reconfigure applies a new list of upstreams without a restart (hot reload): upstreams whose configuration is
// unchanged keep running, with their sessions and calls; removed ones are stopped (their calls in flight fail
// with an error naming them, their per-client sessions close); added ones start; changed ones are replaced.
// Client sessions that use none of the changed upstreams notice nothing but a list_changed.
func (r *Router) Reconfigure(cfgs []UpstreamConfig) (ReloadResult, error) {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	prev := r.set.Load()
	next, err := r.newSet(cfgs, prev)
	if err != nil {
		return ReloadResult{}, err
	}
	var res ReloadResult
	var gone []*upstreamServer
	for _, old := range prev.list {
		switch nu := next.byName[old.cfg.Name]; {
		case nu == old:
			res.Kept = append(res.Kept, old.cfg.Name)
		case nu != nil:
			res.Replaced = append(res.Replaced, old.cfg.Name)
			gone = append(gone, old)
		default:
			res.Removed = append(res.Removed, old.cfg.Name)
			gone = append(gone, old)
		}
	}
	for _, nu := range next.list {
		if prev.byName[nu.cfg.Name] == nil {
			res.Added = append(res.Added, nu.cfg.Name)
		}
	}
	r.mu.Lock() // with Run's start-up, so every upstream is started exactly once
	r.set.Store(next)
	if r.running {
		for _, nu := range next.list {
			if !nu.started() {
				nu.start(r.ctx)
			}
		}
	}
	r.mu.Unlock()
	for _, p := range r.profiles.profileNames() { // new per-client upstreams list for the profiles in use too
		caps := r.profiles.profileCaps(p)
		for _, nu := range next.list {
			nu.shadows.ensure(p, caps)
		}
	}
	// Stop what left in parallel: a stdio child's shutdown takes up to two grace periods.
	for _, up := range gone {
		up.removed.Store(true) // before dropUpstream: linkFor refuses from now on, so no session gets a new link
	}
	var wg sync.WaitGroup
	for _, up := range gone {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range append(r.allSessions(), r.pooledSessions()...) { // pooled sessions have children too
				s.dropUpstream(up)
			}
			up.stopAndWait()
		}()
	}
	wg.Wait()
	r.rebuild()
	// A reload during start that removed the last upstream yet to have its first try leaves the rest tried: the
	// router is ready now, and nobody else would say so (a removed link ends without a state change).
	r.readyChanged()
	r.log.Info("upstreams reconfigured", "added", res.Added, "removed", res.Removed, "replaced", res.Replaced, "kept", len(res.Kept))
	return res, nil
}

// RestartUpstream re-establishes an upstream's sessions: its main session and every per-client one. Calls in
// flight on them fail with an error naming the upstream; the sessions come back at once.
func (r *Router) RestartUpstream(name string) error {
	up := r.upstream(name)
	if up == nil {
		return &UnknownUpstreamError{Name: name}
	}
	up.main.restart()
	for _, s := range r.allSessions() {
		if l := s.links.peek(up); l != nil {
			l.restart()
		}
	}
	return nil
}

// DrainUpstream takes an upstream out of service (on) or back in (off): while drained it leaves the catalog and
// new calls to it are refused with an error naming it, while calls in flight finish.
func (r *Router) DrainUpstream(name string, on bool) error {
	up := r.upstream(name)
	if up == nil {
		return &UnknownUpstreamError{Name: name}
	}
	if up.drained.Swap(on) != on {
		r.rebuild()
	}
	return nil
}

package routing

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Capability profiles. Servers offer some tools only to clients that declared a capability (server-everything
// registers its sampling tool only for clients with sampling, and so on), so the catalog of a per-client
// upstream depends on what the client declared (design §3: "a per-client session whose list differs gets its own
// view"). Sessions are grouped by the capabilities that can matter (roots, sampling, form and URL elicitation);
// each group other than "everything" gets template sessions of its own at the per-client upstreams, and a
// catalog built from their lists. A client therefore sees what it would see connected directly.

// maxProfiles bounds the catalogs and template sessions kept per per-client upstream; clients beyond it share
// the full view.
const maxProfiles = 8

// profiles holds the catalog of each profile in use, and starts the template sessions that list for it.
type profiles struct {
	core profileCore

	mu    sync.Mutex
	m     map[string]*profileView
	order []string
}

// profileCore is what profiles see of the router: the upstreams whose template sessions list for a profile, and
// the rebuild that gives a new profile its catalog.
type profileCore interface {
	upstreams() []*upstreamServer
	rebuild()
}

var _ profileCore = (*Router)(nil)

// profileView is one profile's catalog and the capabilities its template sessions declare.
type profileView struct {
	cat  atomic.Pointer[catalog]
	caps json.RawMessage
}

// capsProfile names the capability-dependent part of what a client declared, and the capabilities a template
// session declares for it. The full profile (everything declared) is "": the default catalog serves it.
func capsProfile(c clientCaps) (name string, caps json.RawMessage) {
	var parts, names []string
	if c.Roots != nil {
		parts, names = append(parts, `"roots":{"listChanged":true}`), append(names, "roots")
	}
	if c.Sampling != nil {
		parts, names = append(parts, `"sampling":{}`), append(names, "sampling")
	}
	if e := c.Elicitation; e != nil {
		form := e.Form != nil || e.URL == nil // {} means form only
		var modes []string
		if form {
			modes, names = append(modes, `"form":{}`), append(names, "form")
		}
		if e.URL != nil {
			modes, names = append(modes, `"url":{}`), append(names, "url")
		}
		parts = append(parts, `"elicitation":{`+strings.Join(modes, ",")+`}`)
	}
	if len(names) == 4 {
		return "", json.RawMessage(templateCaps)
	}
	name = strings.Join(names, "+")
	if name == "" {
		name = "none"
	}
	return name, json.RawMessage("{" + strings.Join(parts, ",") + "}")
}

// useProfile makes sure a profile has its catalog and template sessions, and waits (briefly) for their first
// lists, so that a session's first tools/list is already its own. It returns the profile the session gets: ""
// when there is no per-client upstream or too many profiles are in use.
func (ps *profiles) useProfile(name string, caps json.RawMessage) string {
	if name == "" || !ps.hasPerClient() {
		return ""
	}
	ps.mu.Lock()
	_, known := ps.m[name]
	if !known {
		if len(ps.order) >= maxProfiles {
			ps.mu.Unlock()
			return ""
		}
		if ps.m == nil {
			ps.m = map[string]*profileView{}
		}
		ps.m[name] = &profileView{caps: caps}
		ps.order = append(ps.order, name)
	}
	ps.mu.Unlock()
	var fresh []*upstreamServer
	for _, up := range ps.core.upstreams() {
		if sh, created := up.shadows.ensure(name, caps); created {
			fresh = append(fresh, sh)
		}
	}
	if !known {
		ps.core.rebuild() // the profile's catalog exists from now on, from the default lists until its own arrive
	}
	wait := time.NewTimer(5 * time.Second) // a slow upstream's lists join the profile's catalog when they come
	defer wait.Stop()
	for _, sh := range fresh {
		select {
		case <-sh.triedCh:
		case <-wait.C:
			return name
		}
	}
	return name
}

func (ps *profiles) hasPerClient() bool {
	for _, up := range ps.core.upstreams() {
		if up.template() {
			return true
		}
	}
	return false
}

func (ps *profiles) profileNames() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]string(nil), ps.order...)
}

func (ps *profiles) profileCatalog(name string) *atomic.Pointer[catalog] {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if v := ps.m[name]; v != nil {
		return &v.cat
	}
	return nil
}

// profileCaps returns the capabilities a profile's template sessions declare.
func (ps *profiles) profileCaps(name string) json.RawMessage {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if v := ps.m[name]; v != nil {
		return v.caps
	}
	return nil
}

// shadowSet is an upstream's template sessions of capability profiles, by profile: hidden upstreams with the same
// configuration whose only job is to list what clients of a profile see. Its fields are guarded by the upstream's
// mu.
type shadowSet struct {
	up  *upstreamServer
	m   map[string]*upstreamServer
	ctx context.Context // what shadows started later run under; set once the upstream runs
}

// ensure starts the template session of a per-client upstream for a profile.
func (ss *shadowSet) ensure(profile string, caps json.RawMessage) (*upstreamServer, bool) {
	up := ss.up
	if !up.template() || up.modern() || up.storeListed() {
		// A stateless upstream's lists "MUST NOT vary per connection": there is nothing a profile could see
		// differently.
		return nil, false
	}
	up.mu.Lock()
	if sh := ss.m[profile]; sh != nil {
		up.mu.Unlock()
		return sh, false
	}
	sh := &upstreamServer{cfg: up.cfg, r: up.r, transport: up.transport, inflight: up.inflight, kick: make(chan struct{}, 1), shadowOf: up, triedCh: make(chan struct{})}
	sh.subs.up, sh.shadows.up = sh, sh
	sh.main = newLink(up.r, sh, nil, upstream.ClientHello{ProtocolVersion: protocol.LatestLegacy, Capabilities: caps, ClientInfo: up.r.clientInfo()})
	if ss.m == nil {
		ss.m = map[string]*upstreamServer{}
	}
	ss.m[profile] = sh
	ctx := ss.ctx // set once the upstream runs; until then startAll starts it
	up.mu.Unlock()
	if ctx != nil {
		sh.start(ctx)
	}
	return sh, true
}

// startAll starts the shadows made before the upstream itself started.
func (ss *shadowSet) startAll(ctx context.Context) {
	ss.up.mu.Lock()
	ss.ctx = ctx
	var waiting []*upstreamServer
	for _, sh := range ss.m {
		if !sh.started() {
			waiting = append(waiting, sh)
		}
	}
	ss.up.mu.Unlock()
	for _, sh := range waiting {
		sh.start(ctx)
	}
}

// stopAll ends the upstream's template sessions of every profile.
func (ss *shadowSet) stopAll() {
	ss.up.mu.Lock()
	shadows := ss.m
	ss.m = nil
	ss.up.mu.Unlock()
	for _, sh := range shadows {
		sh.stopAndWait()
	}
}

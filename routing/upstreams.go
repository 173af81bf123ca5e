package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// SessionMode says how client sessions map to upstream sessions (design §3).
type SessionMode uint8

const (
	// PerClient gives every client session its own upstream session, created on first use.
	PerClient SessionMode = iota
	// Shared serves every client session through one upstream session.
	Shared
)

// String names the mode as the config file does.
func (m SessionMode) String() string {
	if m == Shared {
		return "shared"
	}
	return "per-client"
}

// UpstreamConfig is what routing needs to know of one configured upstream.
type UpstreamConfig struct {
	Name      string
	Prefix    string // prepended to tool and prompt names; "" exposes them unchanged
	Mode      SessionMode
	Transport upstream.Transport
	// Kind is "stdio" or "http", for health reports.
	Kind string
	// Timeout bounds each forwarded request (reset on progress); zero means Options.RequestTimeout.
	Timeout time.Duration
	// MaxInstances caps the live per-client sessions of this upstream; zero means no cap.
	MaxInstances int
	// IdleTimeout closes a per-client upstream session (and stops its stdio child) after this long without a
	// call; the client session goes on and gets a fresh one on its next call. Zero means never.
	IdleTimeout time.Duration
	// Backoff paces reconnection attempts.
	Backoff upstream.Backoff
	// Protocol is the era setting of the upstream ("auto", "legacy" or "modern"; "" is auto). The transport acts
	// on it; routing only needs to know whether legacy sessions may be opened beside a modern upstream's
	// stateless link (see Upstream.legacyLinks).
	Protocol string
	// Fingerprint identifies the configuration this came from: a reload keeps an upstream whose fingerprint is
	// unchanged (and its sessions), and replaces one whose fingerprint changed.
	Fingerprint string
	// UserGrants, when set, calls the upstream with each principal's own grant (connect.go); Mode must be
	// PerClient.
	UserGrants *UserGrants
	// Tasks, for an upstream that takes no tasks itself, is how the gateway runs its tools as tasks of its own
	// (taskhost.go): "optional", "required", or "" for never. A tool's Override.TaskSupport wins.
	Tasks string
}

// templateCaps is what the catalog's template session of a per-client upstream declares: everything a client
// may bring, so that the catalog shows every tool some client can use. It never runs tools, so it is never asked
// to sample or elicit; roots are answered with an empty list.
const templateCaps = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}`

// upstreamServer is one configured upstream as routing sees it: its main link (the shared session, or the template
// session of a per-client upstream), the lists fetched through it, and its health.
type upstreamServer struct {
	cfg       UpstreamConfig
	r         *Router
	transport upstream.Transport
	main      *link
	inflight  *atomic.Int64 // its requests in flight: the router's count for its name (inflightCounts)

	// listTTL is the ttlMs its last list of each kind carried, plus one (0: none), for the gateway's own
	// cache hints (listscope.go).
	listTTL [numKinds]atomic.Int64

	mu    sync.Mutex
	lists [numKinds][]item
	hello *upstream.ServerHello
	caps  map[string]json.RawMessage
	// subscribe: the upstream declared resources.subscribe.
	subscribe  bool
	subs       sharedSubs    // the subscriptions held for its clients (subscribe.go, listen.go)
	tried      bool          // the first connection attempt and listing have finished, either way
	triedCh    chan struct{} // closed when tried first becomes true
	listed     bool          // some list was fetched (set before the catalog is rebuilt with it)
	dirty      [numKinds]bool
	kick       chan struct{}
	listErrors int    // failed list fetches, reported in Status
	refused    string // the latest person's credential refused, reported in Status (noteRefusal)
	// malformedSeen: the definitions withheld for a member twice that were reported (kind, name, member).
	malformedSeen map[string]struct{}

	instances atomic.Int32
	drained   atomic.Bool
	removed   atomic.Bool // taken out by a reload
	// asksRoots: a session of this upstream asked for roots/list (the template session does, once initialized,
	// if the server uses roots at all).
	asksRoots atomic.Bool

	stop context.CancelFunc // set by start; ends the main link and the refresher
	wg   sync.WaitGroup

	// shadows are the template sessions of capability profiles (profile.go); shadowOf is set on a shadow and
	// names the upstream it lists for.
	shadows  shadowSet
	shadowOf *upstreamServer

	// standingIn: a store-listed per-user upstream shows its stand-in tool (connect.go); cachedRaw is the lists
	// this replica last cached for it, so an unchanged list is not written again.
	standingIn atomic.Bool
	cachedRaw  []byte
}

func (up *upstreamServer) template() bool { return up.cfg.Mode == PerClient }

func (up *upstreamServer) timeout() time.Duration {
	if up.cfg.Timeout > 0 {
		return up.cfg.Timeout
	}
	return up.r.opts.RequestTimeout
}

// newMainLink prepares the main link; start connects it. It is made in New so that up.main never changes once
// the router runs.
func (up *upstreamServer) newMainLink() {
	hello := upstream.ClientHello{ProtocolVersion: protocol.LatestLegacy, Capabilities: json.RawMessage(`{}`), ClientInfo: up.r.clientInfo()}
	if up.template() {
		hello.Capabilities = json.RawMessage(templateCaps)
	}
	up.main = newLink(up.r, up, nil, hello)
}

// start connects the main link and runs the list refresher until stop.
func (up *upstreamServer) start(ctx context.Context) {
	ctx, stop := context.WithCancel(ctx)
	up.mu.Lock()
	up.stop = stop
	up.mu.Unlock()
	if up.storeListed() {
		// No credential of its own to list with: the template session never connects (connect.go).
		up.wg.Go(func() { up.runStoreListed(ctx) })
		return
	}
	up.main.start(ctx)
	up.wg.Add(1)
	go func() { defer up.wg.Done(); up.refresher(ctx) }()
	up.shadows.startAll(ctx)
}

// stopAndWait ends the main link and the refresher.
func (up *upstreamServer) stopAndWait() {
	up.mu.Lock()
	stop := up.stop
	up.mu.Unlock()
	if stop == nil {
		return
	}
	up.shadows.stopAll()
	stop()
	if !up.storeListed() { // a store-listed upstream's main link never started
		up.main.close()
	}
	up.wg.Wait()
}

// connected is called by a link once its handshake is done.
func (up *upstreamServer) connected(l *link, conn *upstream.Conn) {
	if l != up.main {
		if s := l.owner; s != nil {
			s.links.connected(s, l)
		} else {
			l.setUp(l.prepared())
		}
		return
	}
	l.setUp(l.prepared())
	hello := conn.Server
	up.setHello(&hello)
	up.invalidate(kindTools, kindPrompts, kindResources, kindTemplates)
	if hello.ProtocolVersion >= protocol.Modern {
		l.goWork(func() { listenChanges(l) }) // ends when its connection does
		l.goWork(func() { up.rediscover(l, conn) })
		up.subs.relisten()
		l.goWork(up.shadows.stopAll) // profiles made before the era was known have nothing to show
		return
	}
	if up.cfg.Mode == Shared {
		up.subs.restore()
	}
}

// setHello records what the upstream said of itself (initialize, or server/discover) and the capabilities the
// gateway acts on, reporting whether those changed.
func (up *upstreamServer) setHello(hello *upstream.ServerHello) bool {
	caps := map[string]json.RawMessage{}
	_ = json.Unmarshal(hello.Capabilities, &caps)
	var res struct{ Subscribe bool }
	_ = json.Unmarshal(caps["resources"], &res)
	up.mu.Lock()
	defer up.mu.Unlock()
	changed := up.hello == nil || !bytes.Equal(jsonrpc.Compact(nil, up.hello.Capabilities), jsonrpc.Compact(nil, hello.Capabilities))
	up.hello, up.caps, up.subscribe = hello, caps, res.Subscribe
	return changed
}

// stateChanged reacts to the main link's state: when its upstream is down (a dial failed, not a connection
// that is being re-established) the upstream drops out of the catalog until it is back, and counts as tried.
func (up *upstreamServer) stateChanged(l *link) {
	if l != up.main {
		return
	}
	l.mu.Lock()
	state := l.state
	l.mu.Unlock()
	if state != linkDown {
		return
	}
	up.mu.Lock()
	up.markTriedLocked()
	had := false
	for k := range up.lists {
		had = had || len(up.lists[k]) > 0
		up.lists[k] = nil
	}
	up.mu.Unlock()
	if had {
		up.r.rebuild()
	}
	up.r.readyChanged()
}

// markTriedLocked notes that the first attempt finished; up.mu is held.
func (up *upstreamServer) markTriedLocked() {
	if !up.tried {
		up.tried = true
		if up.triedCh != nil { // nil only in tests that build an Upstream by hand
			close(up.triedCh)
		}
	}
}

// maxPages bounds how far an upstream's pagination is followed, against a server that never stops.
const maxPages = 1000

// maxMalformedLogged bounds the malformed definitions an upstream remembers having reported, against one that
// renames them on every list.
const maxMalformedLogged = 256

// instructions is what the upstream's initialize answer told the model about it ("" before it answered).
func (up *upstreamServer) instructions() string {
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.hello == nil {
		return ""
	}
	return up.hello.Instructions
}

// capability reports whether the upstream declared a server capability (and its value).
func (up *upstreamServer) capability(name string) (json.RawMessage, bool) {
	up.mu.Lock()
	defer up.mu.Unlock()
	v, ok := up.caps[name]
	return v, ok
}

// UpstreamStatus is the health of one upstream, for /readyz and the admin API.
type UpstreamStatus struct {
	Name       string `json:"name"`
	Drained    bool   `json:"drained,omitempty"`
	Transport  string `json:"transport"`
	Session    string `json:"session"`
	State      string `json:"state"`
	Error      string `json:"error,omitempty"`
	Server     string `json:"server,omitempty"`
	Protocol   string `json:"protocolVersion,omitempty"`
	Tools      int    `json:"tools"`
	Prompts    int    `json:"prompts"`
	Resources  int    `json:"resources"`
	Templates  int    `json:"resourceTemplates"`
	Restarts   int    `json:"restarts"`
	ListErrors int    `json:"listErrors,omitempty"`
	Instances  int    `json:"instances,omitempty"`
	// Refused is the latest refusal of a person's credential for this upstream (who, when, and the refusal's
	// public reason), for an administrator: an identity provider that would not grant them access, say.
	Refused string `json:"refused,omitempty"`
}

// noteRefusal records that a credential source refused a person for this upstream, for Status.
func (up *upstreamServer) noteRefusal(principal, reason string) {
	up.mu.Lock()
	defer up.mu.Unlock()
	up.refused = time.Now().UTC().Format(time.RFC3339) + " " + principal + ": " + reason
}

func (up *upstreamServer) status() UpstreamStatus {
	st := UpstreamStatus{Name: up.cfg.Name, Transport: up.cfg.Kind, Session: up.cfg.Mode.String(), Instances: int(up.instances.Load()), Drained: up.drained.Load()}
	up.main.mu.Lock()
	st.State = up.main.state.String()
	if up.storeListed() {
		st.State = "per-user" // no session of its own; each person's session is theirs
	}
	if up.main.lastErr != nil && up.main.state != linkReady {
		st.Error = up.main.lastErr.Error()
	}
	st.Restarts = up.main.restarts
	up.main.mu.Unlock()
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.hello != nil {
		st.Protocol = up.hello.ProtocolVersion
		var info struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		if json.Unmarshal(up.hello.ServerInfo, &info) == nil && info.Name != "" {
			st.Server = info.Name + " " + info.Version
		}
	}
	st.ListErrors = up.listErrors
	st.Refused = up.refused
	st.Tools, st.Prompts = len(up.lists[kindTools]), len(up.lists[kindPrompts])
	st.Resources, st.Templates = len(up.lists[kindResources]), len(up.lists[kindTemplates])
	return st
}

// started reports whether start has run.
func (up *upstreamServer) started() bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.stop != nil
}

// namespace is the namespace of up's URIs (namespaceOf its name).
func (up *upstreamServer) namespace() string { return namespaceOf(up.cfg.Name) }

// namespaced is uri with up's namespace.
func (up *upstreamServer) namespaced(uri string) string { return up.namespace() + "+" + uri }

// gatewayTasks is how the gateway runs a tool of up (item, as the upstream lists it) as a task of its own: ""
// when it does not, because nobody asked, or the upstream takes tasks for it itself (they pass through): a
// 2026-07-28 upstream that offers the extension decides per call, a 2025-11-25 one per tool.
func (up *upstreamServer) gatewayTasks(ov *Override, item []byte) string {
	ts := up.cfg.Tasks
	if ov != nil && ov.TaskSupport != "" {
		ts = ov.TaskSupport
	}
	if ts == "" || up.r == nil || !up.r.tasks.enabled() || up.offersTasks() {
		return ""
	}
	if native, _ := jsonrpc.LookupString(item, "execution", "taskSupport"); (native == taskOptional || native == taskRequired) && up.supportsTaskCalls() {
		return ""
	}
	return ts
}

// offersTasks reports whether a 2026-07-28 upstream offers the tasks extension.
func (up *upstreamServer) offersTasks() bool {
	v, ok := up.capability("extensions")
	if !ok {
		return false
	}
	_, _, ok = jsonrpc.Lookup(v, ExtensionTasks)
	return ok
}

// supportsTaskCalls reports whether the upstream declared tasks.requests.tools.call.
func (up *upstreamServer) supportsTaskCalls() bool {
	v, ok := up.capability("tasks")
	if !ok {
		return false
	}
	var t struct {
		Requests struct {
			Tools struct {
				Call *struct{} `json:"call"`
			} `json:"tools"`
		} `json:"requests"`
	}
	return json.Unmarshal(v, &t) == nil && t.Requests.Tools.Call != nil
}

package routing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Per-user upstream grants (issue 17; design §8). An upstream configured with UserGrants is called with each
// principal's own OAuth grant, which the gateway holds (cmd wires gateway/connect behind Connector). A call by a
// principal with no grant is not sent upstream: the client is asked to connect, in the way its era allows.
//
//   - A 2025-11-25 client that declared elicitation.url gets -32042 (URLElicitationRequiredError) with one
//     URL-mode elicitation in data.elicitations. The spec offers elicitation/create with mode "url" too; the
//     error is chosen because it holds no call open across a browser round trip that may end on another
//     replica, and because a retry after notifications/elicitation/complete needs nothing the client did not
//     already send. The notification follows the callback to whichever replica holds the session.
//   - A 2026-07-28 client gets an input_required result whose one input request is that elicitation; its retry
//     (inputResponses with our key) waits here, bounded, for the grant, then goes upstream without our keys.
//   - Any other client gets the link in words: a tool result with isError for tools/call, an error otherwise.
//
// The link is the gateway's (/connect/<id>), single-use, short-lived and bound to the principal and the upstream;
// the spec requires that URL-elicitation state be bound to the user, not to the session, and the connect page
// checks the browser's signed-in user against it.
//
// Until the catalog has the upstream's lists from somewhere, one stand-in tool, <prefix>connect, represents it.
// The lists come from the upstream's template session when a service credential lets it connect
// (UserGrants.ServiceLists); otherwise from a copy cached in the store by the first connected user's session.

// Connector is what routing needs of the per-user grants; cmd implements it over gateway/connect.
type Connector interface {
	// Connected reports whether principal holds a usable grant for upstream.
	Connected(ctx context.Context, principal, upstream string) (bool, error)
	// Link mints the link that connects principal's account at upstream. When it completes, the router is told
	// with GrantConnected, with the session and elicitation id given here ("" for none).
	Link(ctx context.Context, principal, upstream, session, elicitationID string) (string, error)
	// SaveLists and LoadLists keep the upstream's lists as a connected user's session saw them, for the
	// catalog of principals who have not connected (and of replicas that have no such session). LoadLists
	// returns nil, nil when there is none.
	SaveLists(ctx context.Context, upstream string, lists []byte) error
	LoadLists(ctx context.Context, upstream string) ([]byte, error)
}

// UserGrants marks an upstream whose calls run under each principal's own grant.
type UserGrants struct {
	// ServiceLists: the catalog's template session connects with a service credential and lists the upstream
	// as usual. Without it the template session never connects: the catalog uses the cached lists, or the
	// stand-in tool until a first user connects.
	ServiceLists bool
}

const (
	// connectedChannel carries GrantConnected to every replica.
	connectedChannel = "switchboard:grants:connected"
	// listsChannel tells the replicas that an upstream's cached lists changed.
	listsChannel = "switchboard:grants:lists"
	// connectInputKey is the key of the gateway's own input request in a 2026-07-28 input_required result.
	connectInputKey = "switchboard.connect"
	// standInTool is the stand-in's name at the upstream (the catalog prefixes it like any tool).
	standInTool = "connect"
)

func (up *upstreamServer) perUser() bool { return up.cfg.UserGrants != nil }

// storeListed reports whether the upstream's lists come from the store's cache rather than a template session.
func (up *upstreamServer) storeListed() bool {
	return up.cfg.UserGrants != nil && !up.cfg.UserGrants.ServiceLists
}

// connectMessage is what the client and the person are told, in every era.
func connectMessage(upstream string) string {
	return fmt.Sprintf("Connect your %s account to the gateway: open the link, sign in, and approve access. The gateway then calls %s as you.", upstream, upstream)
}

// checkGrant lets a request to a per-user upstream go on when the session's principal holds a grant, reporting
// whether it is a 2026-07-28 retry that answered the gateway's own request to connect (whose inputResponses the
// upstream must not see). Otherwise it answers the client, asking it to connect, and reports false.
func (g *grants) checkGrant(ctx context.Context, s *Session, up *upstreamServer, m jsonrpc.Message, out *Stream) (retried, ok bool) {
	conn, principal, name := s.r.opts.Connector, s.params.Principal, up.cfg.Name
	id := m.ID()
	if conn == nil || principal == "" {
		replyError(out, id, protocol.CodeInvalidRequest, fmt.Sprintf("upstream %q is called with each person's own account, and this session has no signed-in person", name))
		return false, false
	}
	answer, retried := ourInputResponse(m)
	if _, _, stated := jsonrpc.Lookup(m.Params(), "requestState"); retried && stated {
		// The gateway asked to connect without a requestState (the upstream never saw the first try), so the retry
		// that answers it has none to echo: this one was not made from that answer. Refused at once, not held for
		// the person to finish connecting.
		replyError(out, id, protocol.CodeInvalidParams, fmt.Sprintf("requestState is not valid here: the gateway's request to connect %q carried none, so a retry answering it echoes none; retry with inputResponses and without requestState", name))
		return false, false
	}
	ok, err := conn.Connected(ctx, principal, name)
	if err != nil {
		s.r.log.Warn("cannot check a per-user grant", "upstream", name, "session", s.logID(), "err", err)
		replyError(out, id, protocol.CodeInternalError, fmt.Sprintf("the gateway cannot check your connection to %q now; retry shortly", name))
		return false, false
	}
	if !ok && retried {
		var e struct{ Action string }
		_ = json.Unmarshal(answer, &e)
		if e.Action != "accept" {
			s.r.grants.replyNotConnected(s, out, m, name, fmt.Sprintf("Connecting your %s account was declined, so the call was not made.", name))
			return false, false
		}
		// The client accepted to open the link; the person is still in the browser. Wait for the grant.
		ok = s.r.grants.waits.wait(ctx, s.ctx, up.timeout(), principal, name, func(ctx context.Context) bool {
			ok, _ := conn.Connected(ctx, principal, name)
			return ok
		})
	}
	if ok {
		return retried, true
	}
	s.r.grants.askToConnect(ctx, s, up, m, out)
	return false, false
}

// askToConnect mints a link and asks the client to have its person open it.
func (g *grants) askToConnect(ctx context.Context, s *Session, up *upstreamServer, m jsonrpc.Message, out *Stream) {
	name, id := up.cfg.Name, m.ID()
	elicitURL := !s.era.modern() && s.caps.Elicitation != nil && s.caps.Elicitation.URL != nil
	inputURL := s.era.modern() && s.caps.Elicitation != nil && s.caps.Elicitation.URL != nil
	session, elicitationID := "", ""
	if elicitURL {
		// Only a legacy session hears notifications/elicitation/complete; 2026-07-28 removed both.
		session, elicitationID = s.id, newElicitationID()
	}
	link, err := s.r.opts.Connector.Link(ctx, s.params.Principal, name, session, elicitationID)
	if err != nil {
		s.r.log.Error("cannot make a connect link", "upstream", name, "session", s.logID(), "err", err)
		replyError(out, id, protocol.CodeInternalError, fmt.Sprintf("your %q account is not connected, and the gateway cannot make a link to connect it now; retry shortly", name))
		return
	}
	s.r.grants.auditNotConnected(s, up, m)
	msg := connectMessage(name)
	switch {
	case elicitURL:
		// "-32042 URLElicitationRequiredError: data.elicitations lists URL-mode elicitations that must be
		// completed before the original request is retried."
		data := []byte(`{"elicitations":[{"mode":"url","elicitationId":`)
		data = jsonrpc.AppendQuote(data, elicitationID)
		data = append(data, `,"url":`...)
		data = jsonrpc.AppendQuote(data, link)
		data = append(data, `,"message":`...)
		data = jsonrpc.AppendQuote(data, msg)
		data = append(data, `}]}`...)
		text := fmt.Sprintf("This request needs your %s account: open the link the client shows, then retry.", name)
		out.Push(jsonrpc.AppendError(nil, id, protocol.CodeURLElicitationRequired, text, data), ClassFinal)
	case inputURL:
		b := []byte(`{"resultType":"input_required","inputRequests":{"` + connectInputKey + `":{"method":"elicitation/create","params":{"mode":"url","message":`)
		b = jsonrpc.AppendQuote(b, msg)
		b = append(b, `,"url":`...)
		b = jsonrpc.AppendQuote(b, link)
		b = append(b, `}}}}`...)
		reply(out, id, b)
	default:
		s.r.grants.replyNotConnected(s, out, m, name, fmt.Sprintf("Your %s account is not connected to the gateway yet. To connect it, open this link in your browser, sign in, and approve access: %s\nThe link works once, for you only, and expires in a few minutes. Then make the request again.", name, link))
	}
}

// replyNotConnected answers with text a person can follow: a tool result with isError for a tool call (the model
// reads it and can pass it on), an error otherwise.
func (g *grants) replyNotConnected(s *Session, out *Stream, m jsonrpc.Message, upstream, text string) {
	if m.Method() != protocol.MethodToolsCall {
		replyError(out, m.ID(), protocol.CodeInvalidRequest, text)
		return
	}
	b := []byte(`{"content":[{"type":"text","text":`)
	b = jsonrpc.AppendQuote(b, text)
	b = append(b, `}],"isError":true`...)
	if s.era.modern() {
		b = append(b, `,"resultType":"complete"`...)
	}
	reply(out, m.ID(), append(b, '}'))
}

// auditNotConnected records a request that was not sent because its principal has not connected the upstream.
func (g *grants) auditNotConnected(s *Session, up *upstreamServer, m jsonrpc.Message) {
	if s.r.opts.Audit == nil {
		return
	}
	name, _ := jsonrpc.LookupString(m.Params(), "name")
	s.r.opts.Audit(CallEvent{Session: s.logID(), Principal: s.params.Principal, Endpoint: s.params.Endpoint, Upstream: up.cfg.Name,
		Method: m.Method(), Tool: name, Outcome: "not_connected"})
}

// ourInputResponse returns the client's answer to the gateway's connect input request, if the request is a
// 2026-07-28 retry that carries one.
func ourInputResponse(m jsonrpc.Message) (json.RawMessage, bool) {
	st, e, ok := jsonrpc.Lookup(m.Params(), "inputResponses")
	if !ok {
		return nil, false
	}
	s, e2, ok := jsonrpc.Lookup(m.Params()[st:e], connectInputKey)
	if !ok {
		return nil, false
	}
	return json.RawMessage(m.Params()[st:e][s:e2]), true
}

func newElicitationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// callStandIn answers a call of the stand-in tool: it asks to connect, or, once connected, opens the person's
// session of the upstream, which lists it for the catalog (the client hears list_changed).
func (g *grants) callStandIn(ctx context.Context, s *Session, up *upstreamServer, m jsonrpc.Message, out *Stream) {
	if _, ok := s.r.grants.checkGrant(ctx, s, up, m, out); !ok {
		return
	}
	l, err := s.links.linkFor(s, up)
	if err == nil {
		live := l.isReady()
		rctx, cancel := context.WithTimeout(ctx, up.timeout())
		_, err = l.ready(rctx)
		cancel()
		if err == nil && live {
			// The person's session was up already (it met the 401 that asked them to connect again, after a
			// revoked grant or an authorization server's move): a new one lists for the catalog as it connects,
			// this one lists again now.
			l.goWork(func() { s.r.grants.cacheLists(s, l) })
		}
	}
	text := fmt.Sprintf("Your %s account is connected. Its tools are being listed now: list the tools again and call them directly.", up.cfg.Name)
	if err != nil {
		text = fmt.Sprintf("Your %s account is connected, but the upstream cannot be reached now (%v); retry shortly.", up.cfg.Name, err)
	}
	b := []byte(`{"content":[{"type":"text","text":`)
	b = jsonrpc.AppendQuote(b, text)
	if err != nil {
		b = append(b, `}],"isError":true`...)
	} else {
		b = append(b, `}]`...)
	}
	if s.era.modern() {
		b = append(b, `,"resultType":"complete"`...)
	}
	reply(out, m.ID(), append(b, '}'))
}

// grants is the router's part of per-user upstream grants (the Connector holds them): the retries waiting for a
// person to finish connecting, and what the other replicas say of a connection or of new cached lists.
type grants struct {
	core   grantCore
	bus    replicaBus // nil: this replica alone
	log    *slog.Logger
	budget int // the length exposed names fit (Options.nameBudget)
	waits  grantWaiters
}

// grantCore is what grants see of the router: its sessions and upstreams, and the bus channels it follows.
type grantCore interface {
	Session(id string) *Session
	upstream(name string) *upstreamServer
	upstreams() []*upstreamServer
	follow(ctx context.Context, channel string, handle func([]byte))
}

var _ grantCore = (*Router)(nil)

// run follows the other replicas' news of connected accounts and of cached lists, until ctx ends.
func (g *grants) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { g.followGrants(ctx) })
	wg.Go(func() { g.followLists(ctx) })
}

// formerStandIn returns the per-user upstream whose stand-in tool has the exposed name, when the catalog no
// longer lists it.
func (g *grants) formerStandIn(name string) *upstreamServer {
	for _, up := range g.core.upstreams() {
		if up.perUser() && exposedName(up.cfg.Prefix, standInTool, g.budget) == name {
			return up
		}
	}
	return nil
}

// standIn is the stand-in tool's catalog item.
func (up *upstreamServer) standIn() item {
	raw := []byte(`{"name":"` + standInTool + `","title":`)
	raw = jsonrpc.AppendQuote(raw, "Connect your "+up.cfg.Name+" account")
	raw = append(raw, `,"description":`...)
	raw = jsonrpc.AppendQuote(raw, fmt.Sprintf("Connects your own %s account to the gateway, so that %s's tools can be listed and called as you. Call it once; the user is shown a link to approve access in the browser.", up.cfg.Name, up.cfg.Name))
	raw = append(raw, `,"inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`...)
	it := item{raw: raw, id: standInTool}
	it.exposed = exposedName(up.cfg.Prefix, standInTool, up.r.opts.nameBudget())
	it.exposedRaw = replaceMember(raw, "name", it.exposed)
	// No pin hash: the stand-in is the gateway's, and the upstream's own list must not look new beside it.
	return it
}

// cachedLists is how an upstream's lists are kept in the store.
type cachedLists struct {
	Capabilities      json.RawMessage   `json:"capabilities,omitempty"`
	Tools             []json.RawMessage `json:"tools,omitempty"`
	Prompts           []json.RawMessage `json:"prompts,omitempty"`
	Resources         []json.RawMessage `json:"resources,omitempty"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates,omitempty"`
}

func (c *cachedLists) kind(k listKind) *[]json.RawMessage {
	return [...]*[]json.RawMessage{&c.Tools, &c.Prompts, &c.Resources, &c.ResourceTemplates}[k]
}

// runStoreListed keeps a store-listed upstream's lists: the cached copy at start and whenever kicked (a save
// here or on another replica), the stand-in while there is none. It replaces the template session and its
// refresher.
func (up *upstreamServer) runStoreListed(ctx context.Context) {
	for {
		up.loadCachedLists(ctx)
		select {
		case <-ctx.Done():
			return
		case <-up.kick:
		}
	}
}

func (up *upstreamServer) loadCachedLists(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, storeTimeout)
	data, err := up.r.opts.Connector.LoadLists(lctx, up.cfg.Name)
	cancel()
	if err != nil {
		up.r.log.Warn("cached lists of a per-user upstream not loaded", "upstream", up.cfg.Name, "err", err)
	}
	var lists [numKinds][]item
	var caps map[string]json.RawMessage
	if data != nil {
		lists, caps, err = up.parseCachedLists(data)
		if err != nil {
			up.r.log.Warn("cached lists of a per-user upstream are malformed; showing the stand-in", "upstream", up.cfg.Name, "err", err)
		}
	}
	standIn := data == nil || err != nil
	if standIn {
		lists = [numKinds][]item{kindTools: {up.standIn()}}
		caps = map[string]json.RawMessage{"tools": json.RawMessage(`{}`)}
	}
	up.mu.Lock()
	up.lists, up.caps, up.listed = lists, caps, true
	up.markTriedLocked()
	up.mu.Unlock()
	up.standingIn.Store(standIn)
	up.r.rebuild()
	up.r.readyChanged()
}

func (up *upstreamServer) parseCachedLists(data []byte) ([numKinds][]item, map[string]json.RawMessage, error) {
	var c cachedLists
	var lists [numKinds][]item
	if err := json.Unmarshal(data, &c); err != nil {
		return lists, nil, err
	}
	caps := map[string]json.RawMessage{}
	if len(c.Capabilities) > 0 {
		if err := json.Unmarshal(c.Capabilities, &caps); err != nil {
			return lists, nil, err
		}
	}
	for k := listKind(0); k < numKinds; k++ {
		for _, raw := range *c.kind(k) {
			if it, ok := up.newItem(k, raw); ok {
				lists[k] = append(lists[k], it)
			}
		}
	}
	return lists, caps, nil
}

// cacheLists lists a per-user upstream through a connected person's session and keeps the lists in the store
// when they differ from what the catalog has, for everyone's catalog (a store-listed upstream's) on every replica.
func (g *grants) cacheLists(s *Session, l *link) {
	up := l.up
	ctx, cancel := context.WithTimeout(l.ctx, up.timeout())
	defer cancel()
	var c cachedLists
	var own [numKinds][]item
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return
	}
	c.Capabilities = conn.Server.Capabilities
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(c.Capabilities, &caps)
	for k := listKind(0); k < numKinds; k++ {
		if _, ok := caps[k.capability()]; !ok {
			continue
		}
		items, err := up.fetchFrom(ctx, l, k)
		if err != nil {
			s.r.log.Debug("per-user upstream not listed for the cache", "upstream", up.cfg.Name, "method", k.method(), "err", err)
			return
		}
		own[k] = items
		for _, it := range items {
			*c.kind(k) = append(*c.kind(k), it.raw)
		}
	}
	if principal := s.params.Principal; principal != "" {
		if p := s.r.persons.get(principal, true); p.setAll(up, own) {
			s.r.ownListsChanged(principal, p)
		}
	}
	data, err := json.Marshal(c)
	if err != nil {
		return
	}
	up.mu.Lock()
	same := string(up.cachedRaw) == string(data)
	up.cachedRaw = data
	up.mu.Unlock()
	if same && !up.standingIn.Load() {
		return
	}
	if err := s.r.opts.Connector.SaveLists(ctx, up.cfg.Name, data); err != nil {
		s.r.log.Warn("lists of a per-user upstream not cached", "upstream", up.cfg.Name, "err", err)
		return
	}
	if !up.storeListed() {
		return
	}
	up.invalidate() // this replica reloads at once
	if b := s.r.opts.Bus; b != nil {
		if err := b.Publish(ctx, listsChannel, []byte(up.cfg.Name)); err != nil {
			s.r.log.Warn("other replicas not told of new cached lists", "upstream", up.cfg.Name, "err", err)
		}
	}
}

// followLists reloads cached lists another replica saved.
func (g *grants) followLists(ctx context.Context) {
	g.core.follow(ctx, listsChannel, func(name []byte) {
		if up := g.core.upstream(string(name)); up != nil && up.storeListed() {
			up.invalidate()
		}
	})
}

// grantNote is GrantConnected's message on the bus.
type grantNote struct {
	Principal     string `json:"p"`
	Upstream      string `json:"u"`
	Session       string `json:"s,omitempty"`
	ElicitationID string `json:"e,omitempty"`
}

// GrantConnected tells the router that principal connected their upstream account, through a link made for
// session and elicitationID (both "" for a link made elsewhere, such as the connections page). On whichever
// replica holds the session, the client hears notifications/elicitation/complete; retries waiting for the grant
// go on. It never fails: the grant is stored already, and a client that misses the news finds it on its retry.
func (g *grants) GrantConnected(ctx context.Context, principal, upstream, session, elicitationID string) {
	note := grantNote{principal, upstream, session, elicitationID}
	if g.bus != nil {
		b, _ := json.Marshal(note)
		if err := g.bus.Publish(ctx, connectedChannel, b); err == nil {
			return
		} else {
			g.log.Warn("other replicas not told of a connected account; only this one acts on it", "upstream", upstream, "err", err)
		}
	}
	g.grantConnected(note)
}

func (g *grants) followGrants(ctx context.Context) {
	g.core.follow(ctx, connectedChannel, func(b []byte) {
		var note grantNote
		if json.Unmarshal(b, &note) == nil {
			g.grantConnected(note)
		}
	})
}

func (g *grants) grantConnected(note grantNote) {
	g.waits.wake(note.Principal, note.Upstream)
	if note.Session == "" || note.ElicitationID == "" {
		return
	}
	s := g.core.Session(note.Session)
	if s == nil || s.params.Principal != note.Principal {
		return
	}
	// "The server later sends notifications/elicitation/complete {elicitationId}, only to the client that
	// started the elicitation."
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":`)
	msg = jsonrpc.AppendQuote(msg, note.ElicitationID)
	s.notify(append(msg, "}}"...))
	// While the catalog shows the stand-in, the person's session is opened at once, so its lists reach the
	// catalog (and list_changed the clients) without waiting for a retry.
	if up := g.core.upstream(note.Upstream); up != nil && up.storeListed() && up.standingIn.Load() {
		s.goWork(func() {
			l, err := s.links.linkFor(s, up)
			if err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, up.timeout())
			defer cancel()
			_, _ = l.ready(ctx)
		})
	}
}

// grantWaiters are the 2026-07-28 retries waiting for a person to finish connecting, by principal and upstream.
type grantWaiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
	n  int // waiters in m, against maxGrantWaiters
}

// maxGrantWaiters bounds the retries waiting at once on a replica; past it a retry is asked to connect again.
const maxGrantWaiters = 10000

// grantPoll is how often a waiting retry asks the store, in case the news of the grant was lost.
const grantPoll = 2 * time.Second

// wait blocks until the grant of principal for upstream arrives (woken, or check finds it), ctx or session ends,
// or limit passes, and reports whether it arrived.
func (g *grantWaiters) wait(ctx, session context.Context, limit time.Duration, principal, upstream string, check func(context.Context) bool) bool {
	key := principal + "\x00" + upstream
	ch := make(chan struct{}, 1)
	g.mu.Lock()
	if g.n >= maxGrantWaiters {
		g.mu.Unlock()
		return false
	}
	if g.m == nil {
		g.m = map[string]map[chan struct{}]struct{}{}
	}
	if g.m[key] == nil {
		g.m[key] = map[chan struct{}]struct{}{}
	}
	g.m[key][ch] = struct{}{}
	g.n++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.n--
		delete(g.m[key], ch)
		if len(g.m[key]) == 0 {
			delete(g.m, key)
		}
		g.mu.Unlock()
	}()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	poll := time.NewTicker(grantPoll)
	defer poll.Stop()
	for {
		select {
		case <-ch:
			return true
		case <-poll.C:
			if check(ctx) {
				return true
			}
		case <-deadline.C:
			return check(ctx)
		case <-ctx.Done():
			return false
		case <-session.Done():
			return false
		}
	}
}

func (g *grantWaiters) wake(principal, upstream string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for ch := range g.m[principal+"\x00"+upstream] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// errNoConnector: a per-user upstream configured without the router's Connector.
var errNoConnector = errors.New("per-user upstreams need Options.Connector")

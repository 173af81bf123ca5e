package routing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// A session's scope (issue 32, item 3): everything a request addresses by name, id or URI is asked here, against
// the session's endpoint view, its principal's policy (or the request's own, WithAllow) and the URIs upstreams'
// results named to it. What falls outside does not exist for the session: it is answered like what nobody offers.

// scope is one session's: the policy its latest pooled request brought, and the URIs its results named.
type scope struct {
	s *Session
	// allowNow is a pooled session's policy as its latest request brought it (PooledSession); nil for others,
	// whose policy is params.Allow.
	allowNow atomic.Pointer[Allow]

	mu   sync.Mutex
	seen map[string]uriRoute // client-visible URIs that upstreams' results named, for reads (bounded)
}

// Allow is a policy decision: may the session see and use this item of this upstream?
type Allow func(upstream, kind, name string) bool

// policyKey is the context key of one request's own policy (WithAllow).
type policyKey struct{}

// WithAllow returns ctx carrying one request's policy, by which HandleRequest judges that request instead of by
// its session's. A 2026-07-28 request has no session: it carries its caller's authorization, and the pooled
// session it shares with the caller's other requests may have started under another token (other claims, other
// scopes), so a front end sets it on each of them.
func WithAllow(ctx context.Context, allow Allow) context.Context {
	return context.WithValue(ctx, policyKey{}, &allow)
}

// policy returns what judges a request of the session made with ctx: the request's own policy (WithAllow), else
// the session's current one. The pointer identifies it, for what is cached per policy.
func (sc *scope) policy(ctx context.Context) *Allow {
	if p, ok := ctx.Value(policyKey{}).(*Allow); ok {
		return p
	}
	if p := sc.allowNow.Load(); p != nil {
		return p
	}
	return &sc.s.params.Allow
}

// named resolves a tool or prompt name as the session sees it: its target, when the name is in the session's
// endpoint's view and its policy allows it. What the session may not use does not exist for it; a denial is
// audited under method ("" audits nothing: a search filtering what it may show is not a request for the tool).
func (sc *scope) named(ctx context.Context, cat *catalog, k listKind, name, method string) (target, bool) {
	t, ok := cat.targets(k)[name]
	if !ok {
		return target{}, false
	}
	if !cat.inView(sc.s.params.Endpoint, k, name) {
		if method != "" {
			sc.s.r.inst.auditRefusalBy(scriptRunOf(ctx), sc.s, t.up, method, name, outcomeRefused, reasonOutsideView, protocol.CodeInvalidParams)
		}
		return target{}, false // another endpoint's is unknown here, like a name nobody offers
	}
	if !sc.allows(ctx, t.up, k, t.name) {
		if method != "" {
			sc.s.r.inst.auditRefusalBy(scriptRunOf(ctx), sc.s, t.up, method, name, outcomeDenied, "policy", 0)
		}
		return target{}, false
	}
	return t, true
}

// noResource answers a request for a resource the session cannot reach: with the error of the client's era, and
// the namespaced names when the catalog lists the URI only under those.
func (sc *scope) noResource(out *Stream, id []byte, cat *catalog, uri string) {
	code := protocol.CodeResourceNotFound
	if sc.s.era.modern() {
		code = protocol.CodeInvalidParams // 2026-07-28 retired -32002
	}
	msg := cat.ambiguity(uri)
	if msg == "" {
		msg = fmt.Sprintf("resource %q not found on any upstream", uri)
	}
	out.Push(jsonrpc.AppendError(nil, id, code, msg, append(append([]byte(`{"uri":`), jsonrpc.AppendQuote(nil, uri)...), '}')), ClassFinal)
}

// allowsUpstream reports whether the policy of a request (or, with a context that carries none, of the session)
// lets it use the upstream at all.
func (sc *scope) allowsUpstream(ctx context.Context, up *upstreamServer) bool {
	allow := *sc.policy(ctx)
	return allow == nil || allow(up.cfg.Name, "upstream", "")
}

// allows applies the request's policy to an item of an upstream.
func (sc *scope) allows(ctx context.Context, up *upstreamServer, k listKind, name string) bool {
	allow := *sc.policy(ctx)
	return allow == nil || allow(up.cfg.Name, k.policyKind(), name)
}

// allowsURI applies the policy to a resource URI: allowed as a resource, or as an instance of an allowed
// template of the same upstream that no deny names ("deny wins, whatever the order": a deny on one URI must hold
// against an allow of the template that produces it). Reads, subscriptions, listen filters and completion
// references all come through here.
func (sc *scope) allowsURI(ctx context.Context, up *upstreamServer, uri string) bool {
	allow := *sc.policy(ctx)
	if allow == nil || allow(up.cfg.Name, kindResources.policyKind(), uri) {
		return true
	}
	for _, t := range sc.s.catalog().templates {
		if t.up == up && t.re.MatchString(uri) && allow(up.cfg.Name, kindTemplates.policyKind(), t.tmpl) {
			return allow(up.cfg.Name, kindInstance, uri)
		}
	}
	return false
}

// kindInstance is the policy kind of a concrete URI an allowed template produces: allowed unless a deny names it
// (auth.KindInstance).
const kindInstance = "instance"

// resolveURI finds where a client-visible URI leads: the catalog's resources and templates (namespaced or not),
// the URIs upstreams' results named to this session (a resource_link or an embedded resource need not be
// listed), and finally the only upstream that offers resources at all, unless the catalog lists the URI only
// namespaced (several upstreams offer it: no silent winner).
func (sc *scope) resolveURI(c *catalog, uri string) (uriRoute, bool) {
	if rt, ok := c.resolveURI(uri); ok {
		return rt, true
	}
	sc.mu.Lock()
	rt, ok := sc.seen[uri]
	sc.mu.Unlock()
	if ok {
		return rt, true
	}
	if c.ambiguity(uri) != "" {
		return uriRoute{}, false
	}
	if up := sc.s.r.set.Load().soleProvider("resources"); up != nil {
		return uriRoute{up, uri}, true
	}
	return uriRoute{}, false
}

// maxSeenURIs bounds the URIs a session remembers from results.
const maxSeenURIs = 1000

// noteURIs remembers the resource URIs a result of up names, by the names the client sees them by.
func (sc *scope) noteURIs(up *upstreamServer, res []byte) {
	uris := collectURIs(res)
	if len(uris) == 0 {
		return
	}
	c := sc.s.catalog()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, u := range uris {
		if len(sc.seen) >= maxSeenURIs {
			clear(sc.seen)
		}
		sc.seen[c.exposeURI(up, u)] = uriRoute{up, u}
	}
}

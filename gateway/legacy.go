package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The HTTP+SSE transport of 2024-11-05, kept for old clients: "Servers wanting to support older clients should
// continue to host both the SSE and POST endpoints of the old transport, alongside the new MCP endpoint". The
// client GETs /sse, whose first event, `endpoint`, names the URL it POSTs every message to; every server
// message arrives as a `message` event on that one stream.

// legacyConns maps the ids in the endpoint URLs to their connections.
type legacyConns struct {
	mu    sync.Mutex
	conns map[string]*monoConn
}

func (lc *legacyConns) add(c *monoConn) string {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	lc.mu.Lock()
	if lc.conns == nil {
		lc.conns = map[string]*monoConn{}
	}
	lc.conns[id] = c
	lc.mu.Unlock()
	return id
}

func (lc *legacyConns) get(id string) *monoConn {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.conns[id]
}

func (lc *legacyConns) remove(id string) {
	lc.mu.Lock()
	delete(lc.conns, id)
	lc.mu.Unlock()
}

// legacyFront is the HTTP+SSE front end: GET /sse opens a connection (a monoConn) and POST /message feeds it.
type legacyFront struct {
	sessions Sessions
	open     *opener
	who      callers
	limits   *callerLimits
	hub      *streamHub
	maxBody  int64
	conns    legacyConns
}

// get opens an HTTP+SSE connection; it lasts as long as this request, and its session with it.
func (l *legacyFront) get(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		writeError(w, http.StatusNotAcceptable, nil, protocol.CodeInvalidRequest, "the Accept header must list text/event-stream")
		return
	}
	c := newMonoConn(l.sessions, l.open)
	c.owner, c.endpoint = l.who.key(r.Context()), EndpointFrom(r.Context())
	id := l.conns.add(c)
	defer func() {
		l.conns.remove(id)
		c.close()
	}()
	sw := l.hub.startSSE(w, nil, nil)
	sw.buf = append(sw.buf[:0], "event: endpoint\ndata: "+messagePath(r.Context())+"?sessionId="+id+"\n\n"...)
	if sw.write() != nil {
		return
	}
	ctx := r.Context()
	dctx, stop := l.hub.untilDrain(ctx) // wakes the wait below when shutdown begins
	defer stop()
	for {
		// Everything of a legacy session travels on this one stream, answers included: on shutdown it stays
		// open until the session's calls in flight are answered (or the grace period ends), then ends with a
		// reconnection hint.
		base, wait := dctx, l.hub.keepAlive
		if l.hub.isDraining() {
			if sess := c.session(); sess == nil || sess.InFlight() == 0 {
				l.hub.retryHint(sw)
				return
			}
			base, wait = ctx, 100*time.Millisecond
		}
		nctx, cancel := context.WithTimeout(base, wait)
		msg, ok := c.next(nctx)
		cancel()
		switch {
		case ok:
			if sw.event("", msg) != nil {
				return
			}
		case ctx.Err() != nil:
			return
		case c.session() != nil && isDone(c.session().Done()):
			return
		case dctx.Err() != nil:
			// shutdown began: the loop decides above
		default:
			if sw.comment("keep-alive") != nil {
				return
			}
		}
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// post takes one message of an HTTP+SSE connection; its answer goes on the connection's stream.
func (l *legacyFront) post(w http.ResponseWriter, r *http.Request) {
	c := l.conns.get(r.URL.Query().Get("sessionId"))
	if c == nil || l.who.key(r.Context()) != c.owner || EndpointFrom(r.Context()) != c.endpoint {
		writeError(w, http.StatusNotFound, nil, protocol.CodeInvalidRequest, "unknown sessionId: open a new connection with GET /sse")
		return
	}
	body, ok := readBody(w, r, l.maxBody)
	if !ok {
		return
	}
	m, err := jsonrpc.Parse(body)
	if err != nil {
		writeParseError(w, err)
		return
	}
	if m.Kind() == jsonrpc.KindRequest {
		// Requests count against the caller's rate like those of every other front end. Their answers leave on
		// the GET stream, after this POST is answered, so the bound on calls in flight cannot hold a lease here:
		// it applies to the other front ends only (docs/security.md).
		release, ok := l.limits.admit(w, r, m)
		if !ok {
			return
		}
		release()
	}
	if err := c.handle(r.Context(), m); err != nil {
		writeError(w, http.StatusBadRequest, nil, protocol.CodeInvalidRequest, err.Error())
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

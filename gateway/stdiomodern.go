package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The 2026-07-28 era over stdio (design §6): the requests are those of POST /mcp without the header layer ("All
// request metadata for the stdio transport is carried inline in the JSON-RPC message body"), served by the same
// pooled sessions, and their answers share stdout ("responses to client requests, in-flight notifications, and
// deliveries on a subscriptions/listen stream — arrive on stdout, one message per line, multiplexed onto a single
// shared channel"). With no stream to close, "the client MUST send a notifications/cancelled notification
// referencing the request's ID", for a call and for a subscription alike.

var (
	// errStdinClosed ends the requests in flight when the client closes stdin (or the connection ends).
	errStdinClosed = errors.New("the client closed stdin")
	// errCancelledByClient ends a request the client cancelled.
	errCancelledByClient = errors.New("cancelled by the client")
)

// stdioModern serves the 2026-07-28 requests of one stdio client, each on a goroutine of its own, as HTTP serves
// each on its own request: the reader never waits for an upstream.
type stdioModern struct {
	f *modernFront
	w *lineWriter
	// work are the requests' goroutines; ServeStdio waits for them.
	work sync.WaitGroup

	mu sync.Mutex
	// live are the requests in flight (subscriptions included) by idKey, to be found by notifications/cancelled.
	// Ids are unique among them: a request "MUST NOT match the ID of any other request the sender has issued and
	// not yet received a response for".
	live map[string]*inflight
}

// inflight is one request in flight.
type inflight struct {
	key    string
	cancel context.CancelCauseFunc
}

func newStdioModern(f *modernFront, w *lineWriter) *stdioModern {
	return &stdioModern{f: f, w: w, live: map[string]*inflight{}}
}

// idKey is how a request id is found again: the same id written another way (a string with escapes) is the same.
func idKey(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		if v, err := jsonrpc.Unquote(raw); err == nil {
			return "s" + v
		}
	}
	return "n" + string(raw)
}

// maxStdioInFlight bounds the 2026-07-28 requests one stdio client has in flight (subscriptions included): past
// it a request is refused at once, as HTTP's concurrency limits refuse, rather than queued or left to grow.
const maxStdioInFlight = 256

// request starts serving one 2026-07-28 request.
func (mod *stdioModern) request(ctx context.Context, m jsonrpc.Message) {
	rctx, cancel := context.WithCancelCause(ctx)
	req := &inflight{key: idKey(m.ID()), cancel: cancel}
	mod.mu.Lock()
	_, taken := mod.live[req.key]
	full := !taken && len(mod.live) >= maxStdioInFlight
	if !taken && !full {
		mod.live[req.key] = req
	}
	mod.mu.Unlock()
	if full {
		cancel(nil)
		mod.work.Go(func() {
			_ = mod.w.line(jsonrpc.AppendError(nil, m.ID(), protocol.CodeUnavailable,
				fmt.Sprintf("switchboard: %d requests of this client are in flight, the most one stdio client may have; wait for some answers", maxStdioInFlight), nil))
		})
		return
	}
	if taken {
		cancel(nil)
		// Its answer could not be told from the other request's, nor could a cancellation: refused, on a goroutine
		// like any answer so that a client that does not read never stops the reader.
		mod.work.Go(func() {
			_ = mod.w.line(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest, "a request with this id is in flight: ids must be unique among the requests awaiting an answer", nil))
		})
		return
	}
	mod.work.Go(func() {
		defer func() { mod.forget(req); cancel(nil) }()
		mod.serve(rctx, req, m)
	})
}

// forget removes a request from the ones in flight, reporting whether it was there (not cancelled, nor answered,
// meanwhile). Once answered, its id may name a new request, which stays.
func (mod *stdioModern) forget(req *inflight) bool {
	mod.mu.Lock()
	defer mod.mu.Unlock()
	if mod.live[req.key] != req {
		return false
	}
	delete(mod.live, req.key)
	return true
}

// cancel ends the request a notifications/cancelled names, reporting whether it named one in flight.
func (mod *stdioModern) cancel(params []byte) bool {
	st, e, ok := jsonrpc.Lookup(params, "requestId")
	if !ok {
		return false
	}
	key := idKey(params[st:e])
	mod.mu.Lock()
	req := mod.live[key]
	delete(mod.live, key)
	mod.mu.Unlock()
	if req == nil {
		return false
	}
	req.cancel(errCancelledByClient)
	return true
}

// answer writes a request's final answer, unless it was cancelled: the server "MUST NOT send any further
// messages for it". The request leaves the ones in flight first, so that the client may reuse its id as soon as
// it reads the answer.
func (mod *stdioModern) answer(req *inflight, msg []byte) {
	if mod.forget(req) {
		_ = mod.w.line(msg)
	}
}

// serve answers one request, as modernFront.post does over HTTP.
func (mod *stdioModern) serve(ctx context.Context, req *inflight, m jsonrpc.Message) {
	f, id := mod.f, m.ID()
	meta, bad := readModernMeta(m.Params())
	if bad != nil {
		mod.answer(req, jsonrpc.AppendError(nil, id, protocol.CodeInvalidParams, bad.msg, nil))
		return
	}
	if meta.version != protocol.Modern {
		// "If the server does not implement the requested version ... it MUST respond with an
		// UnsupportedProtocolVersionError listing the versions it does support."
		mod.answer(req, unsupportedVersionError(id, meta.version))
		return
	}
	params := f.params(ctx, meta)
	switch m.Method() {
	case protocol.MethodServerDiscover:
		if answer := f.discover(ctx, id); ctx.Err() == nil {
			mod.answer(req, answer)
		}
		return
	case protocol.MethodSubscriptionsListen:
		mod.listen(ctx, req, m, params)
		return
	}
	// Held during start until the catalog holds every upstream that is coming up, as an initialize is.
	if f.sessions.WaitStart(ctx, m.Method(), f.initWait) != nil || ctx.Err() != nil {
		return // cancelled before it started
	}
	sess := f.sessions.PooledSession(params)
	out := f.sessions.NewStream(1, 0)
	pctx := ownPolicy(ctx, params)
	before := f.listHint(pctx, sess, m.Method())
	sess.HandleRequest(pctx, m, out)
	for {
		msg, final, ok := out.Next(ctx)
		if ctx.Err() != nil {
			// Cancelled by the client, or the client left: the call upstream is cancelled, as a closed stream
			// cancels one over HTTP, and nothing more is written for it.
			sess.Cancel(out, id, context.Cause(ctx).Error())
			out.Close()
			return
		}
		if !ok {
			return // the call ended without an answer (routing abandoned it)
		}
		if final {
			answer, _ := f.final(msg, id, m.Method(), before.and(f.listHint(pctx, sess, m.Method())))
			mod.answer(req, answer)
			return
		}
		// Only notifications precede the answer (progress, and log messages at the request's level): routing
		// parks a stateless session's server→client requests and asks through an input_required result.
		_ = mod.w.line(msg)
	}
}

// listen serves subscriptions/listen over stdio: the acknowledgement, then the notifications the filter asks
// for, each tagged with the subscription id ("On stdio, where all messages share a single channel, clients MUST
// use this field to correlate notifications with their originating subscription"), until the client cancels it
// or leaves.
func (mod *stdioModern) listen(ctx context.Context, req *inflight, m jsonrpc.Message, params routing.SessionParams) {
	sub, ack, ok := mod.f.openSubscription(ctx, m, params)
	if !ok {
		mod.answer(req, jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidParams, errListenParams, nil))
		return
	}
	defer sub.close()
	if ctx.Err() != nil || mod.w.line(ack) != nil {
		return
	}
	for {
		msg, ok := sub.next(ctx)
		if ctx.Err() != nil {
			return // the client cancelled the subscription, or left: nothing more for it
		}
		if !ok {
			// The gateway ended it. "The server tears it down — it MUST ... send notifications/cancelled referencing
			// the subscriptions/listen request ID (stdio)", and the result ends the request gracefully ("sent only
			// when the server tears the subscription down"), so that a client waiting for it is not left waiting.
			params := append(append([]byte(`{"requestId":`), m.ID()...), `,"reason":"the gateway ended the subscription"}`...)
			_ = mod.w.line(jsonrpc.AppendNotification(nil, protocol.NotificationCancelled, params))
			mod.answer(req, sub.ended())
			return
		}
		if mod.w.line(msg) != nil {
			return
		}
	}
}

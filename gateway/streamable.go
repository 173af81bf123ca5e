package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

// streamable is the streamable HTTP front end (POST, GET and DELETE on /mcp and /mcp/<endpoint>): it finds or
// starts the legacy sessions, hands each message to its session and writes the answers; a 2026-07-28 request goes
// to modern.
type streamable struct {
	sessions Sessions
	open     *opener
	who      callers
	limits   *callerLimits
	hub      *streamHub
	obs      *observer
	modern   *modernFront
	maxBody  int64
	// caller and restored complete a session claim (callers.policy, streamHub.shareSession), made once.
	caller   func(context.Context) (routing.Allow, func(context.Context) context.Context)
	restored func(*routing.Session)
}

// opener answers initialize, for every front end that has legacy sessions.
type opener struct {
	sessions Sessions
	offer    Offering
	who      callers
	initWait time.Duration
	log      *slog.Logger
}

// post handles every client message: "Every JSON-RPC message sent from the client MUST be a new HTTP POST
// request to the MCP endpoint."
func (h *streamable) post(w http.ResponseWriter, r *http.Request) {
	start, label := time.Now(), "invalid"
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	defer func() { h.obs.record(label, "streamable-http", sw.status, start) }()
	if !accepts(r, "application/json") || !accepts(r, "text/event-stream") {
		writeError(w, http.StatusNotAcceptable, nil, protocol.CodeInvalidRequest, "the Accept header must list both application/json and text/event-stream")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if !isJSONType(ct) {
			writeError(w, http.StatusUnsupportedMediaType, nil, protocol.CodeInvalidRequest, "the Content-Type must be application/json")
			return
		}
	}
	body, ok := readBody(w, r, h.maxBody)
	if !ok {
		return
	}
	hv := r.Header.Get(protocol.HeaderProtocolVersion)
	if jsonrpc.IsBatch(body) {
		if hv == protocol.Modern {
			writeError(w, http.StatusBadRequest, nil, protocol.CodeInvalidRequest, "JSON-RPC batches are not allowed in protocol version "+protocol.Modern+": send one request per POST")
			return
		}
		if hv != "" && !protocol.SupportedLegacy(hv) {
			unsupportedVersion(w, nil, hv)
			return
		}
		label = "batch"
		h.postBatch(w, r, body)
		return
	}
	m, err := jsonrpc.Parse(body)
	if err != nil {
		writeParseError(w, err)
		return
	}
	label = methodLabel(m)
	ctx, op := h.obs.startOp(r, sw, m, start)
	defer op.end()
	if isModern(r, m) {
		h.modern.post(ctx, w, r, m)
		return
	}
	if hv != "" && !protocol.SupportedLegacy(hv) {
		unsupportedVersion(w, m.ID(), hv)
		return
	}
	if m.Kind() == jsonrpc.KindRequest && m.MethodIs("initialize") {
		// Starting sessions counts against the caller's rate like any request: sessions cost memory here and
		// records in Redis.
		release, ok := h.limits.admit(w, r, m)
		if !ok {
			return
		}
		defer release()
		h.initialize(w, r, m)
		return
	}
	sess, ok := h.session(w, r)
	if !ok {
		return
	}
	switch m.Kind() {
	case jsonrpc.KindNotification:
		sess.HandleNotification(m)
		w.WriteHeader(http.StatusAccepted)
	case jsonrpc.KindResponse:
		sess.HandleResponse(m)
		w.WriteHeader(http.StatusAccepted)
	default:
		release, ok := h.limits.admit(w, r, m)
		if !ok {
			return
		}
		defer release()
		out := h.sessions.NewStream(1, 0)
		sess.HandleRequest(ctx, m, out)
		h.respond(w, r, sess, out, false, [][]byte{m.ID()})
	}
}

// methodLabel names a message for metrics without letting clients mint label values: unknown methods are
// "other".
func methodLabel(m jsonrpc.Message) string {
	switch m.Kind() {
	case jsonrpc.KindNotification:
		return "notification"
	case jsonrpc.KindResponse:
		return "response"
	}
	switch meth := m.Method(); meth {
	case "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
		"resources/read", "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
		"completion/complete", "logging/setLevel", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update",
		"server/discover", "subscriptions/listen":
		return meth
	}
	return "other"
}

// preallocBody is the largest declared body readBody allocates in full before it arrives.
const preallocBody = 64 << 10

// readBody reads a request body within the size limit (bytes), answering 413 beyond it.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	if n := r.ContentLength; n >= 0 && n <= min(limit, preallocBody) {
		// A small declared length: net/http's body ends there, so one buffer of that size holds it all. Larger
		// bodies grow with what arrives, so that a client cannot pin the limit's worth of memory with a header.
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			writeError(w, http.StatusBadRequest, nil, protocol.CodeParseError, "reading the request body failed")
			return nil, false
		}
		return body, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, nil, protocol.CodeInvalidRequest, fmt.Sprintf("the request body exceeds the limit of %d bytes", tooBig.Limit))
			return nil, false
		}
		writeError(w, http.StatusBadRequest, nil, protocol.CodeParseError, "reading the request body failed")
		return nil, false
	}
	return body, true
}

// writeParseError maps a jsonrpc.Parse error to the spec's answer: -32700 for bytes that are not JSON, -32600
// for JSON that is not a valid request; both with HTTP 400.
func writeParseError(w http.ResponseWriter, err error) {
	if errors.Is(err, jsonrpc.ErrParse) {
		writeError(w, http.StatusBadRequest, nil, protocol.CodeParseError, "parse error: "+err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, nil, protocol.CodeInvalidRequest, "invalid request: "+err.Error())
}

// session finds the session a request names, answering 400 or 404 itself when there is none.
func (h *streamable) session(w http.ResponseWriter, r *http.Request) (*routing.Session, bool) {
	id := r.Header.Get(protocol.HeaderSessionID)
	if id == "" {
		writeError(w, http.StatusBadRequest, nil, protocol.CodeInvalidRequest, "the Mcp-Session-Id header is required; send initialize first to start a session")
		return nil, false
	}
	c := h.who.claim(r, id)
	// With shared state, a session another replica made is restored where the request lands, with the caller's
	// policy, and its standalone messages join the shared log from here.
	c.Caller, c.Restored = h.caller, h.restored
	sess, err := h.sessions.ClaimSession(r.Context(), c)
	if err != nil {
		// Whether the session lives on another replica is unknown: a 404 would oblige the client to start over,
		// so answer with a status it retries.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, nil, protocol.CodeInternalError, "the gateway cannot reach its shared session store to find this session; retry shortly")
		return nil, false
	}
	if sess == nil {
		// "The server MAY terminate the session at any time, after which it MUST respond to requests containing
		// that session ID with HTTP 404 Not Found."
		writeError(w, http.StatusNotFound, nil, protocol.CodeInvalidRequest, "session not found: it ended or never existed; send initialize to start a new one")
		return nil, false
	}
	return sess, true
}

// initialize starts a session over streamable HTTP.
func (h *streamable) initialize(w http.ResponseWriter, r *http.Request, m jsonrpc.Message) {
	sess, answer := h.open.start(r.Context(), m)
	if sess != nil {
		w.Header().Set(protocol.HeaderSessionID, sess.ID())
		h.hub.shareSession(sess)
	}
	writeJSON(w, http.StatusOK, answer)
}

// start answers an initialize request, starting a session unless the request is invalid (then sess is
// nil and answer is the error). Version negotiation: "If the server supports the requested protocol version, it
// MUST respond with the same version. Otherwise, the server MUST respond with another protocol version it
// supports."
func (o *opener) start(ctx context.Context, m jsonrpc.Message) (sess *routing.Session, answer []byte) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if dup, ok := m.DuplicateMember(); ok {
		// The capabilities go to the client's own upstream sessions as they are: the gateway must read what they
		// read (see routing's Session.HandleRequest).
		return nil, jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("params holds the member %q twice in one object (after unescaping): send each member once", dup), nil)
	}
	if err := json.Unmarshal(m.Params(), &p); err != nil || p.ProtocolVersion == "" {
		return nil, jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidParams, "initialize needs params.protocolVersion, params.capabilities and params.clientInfo", nil)
	}
	// The session keeps both for its life (and the shared store a copy): the same bound as for a 2026-07-28
	// request's, so that a session costs what a real client's does.
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"capabilities", p.Capabilities}, {"clientInfo", p.ClientInfo}} {
		if len(f.raw) > maxCapabilitiesBytes {
			return nil, jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("params.%s is %d bytes; at most %d are accepted", f.name, len(f.raw), maxCapabilitiesBytes), nil)
		}
	}
	version := p.ProtocolVersion
	if !protocol.SupportedLegacy(version) {
		version = protocol.V20251125
	}
	wctx, cancel := context.WithTimeout(ctx, o.initWait)
	_ = o.sessions.WaitReady(wctx) // a slow upstream must not hold every client back for long
	cancel()
	who := o.who.identify(ctx)
	sess = o.sessions.NewSession(routing.SessionParams{
		ProtocolVersion: version, Capabilities: p.Capabilities, ClientInfo: p.ClientInfo,
		Principal: who.Key, Allow: who.Allow, Context: who.Context, Endpoint: EndpointFrom(ctx),
	})
	o.log.Debug("session started", "protocolVersion", version, "endpoint", EndpointFrom(ctx))
	return sess, jsonrpc.AppendResult(nil, m.ID(), initializeResult(version, capabilitiesFor(version, o.offer.Capabilities()), o.offer.ServerInfo(), o.offer.Instructions()))
}

// capabilitiesFor is caps as a client at version may read them: the tasks capability only from 2025-11-25, the
// revision that introduced it; an older client has no tasks/get or task-augmented calls to use it with.
// (2026-07-28 replaced it by an extension, which server/discover announces instead: discoverResult.)
func capabilitiesFor(version string, caps json.RawMessage) json.RawMessage {
	if protocol.AtLeast(version, protocol.V20251125) {
		return caps
	}
	return jsonrpc.DeleteMembers(caps, "tasks")
}

func initializeResult(version string, caps, info json.RawMessage, instructions string) []byte {
	b := append([]byte(`{"protocolVersion":`), jsonrpc.AppendQuote(nil, version)...)
	b = append(append(b, `,"capabilities":`...), caps...)
	b = append(append(b, `,"serverInfo":`...), info...)
	if instructions != "" {
		b = append(append(b, `,"instructions":`...), jsonrpc.AppendQuote(nil, instructions)...)
	}
	return append(b, '}')
}

// maxBatch bounds the messages of one batch.
const maxBatch = 100

// postBatch handles a JSON-RPC batch, which only 2025-03-26 allows: "MCP implementations MUST support receiving
// JSON-RPC batches" there, and later versions removed them.
func (h *streamable) postBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	parts, err := jsonrpc.SplitBatch(body)
	if err != nil {
		writeParseError(w, err)
		return
	}
	sess, ok := h.session(w, r)
	if !ok {
		return
	}
	if v := sess.ProtocolVersion(); v != protocol.V20250326 {
		writeError(w, http.StatusBadRequest, nil, protocol.CodeInvalidRequest, fmt.Sprintf("JSON-RPC batches are not allowed in protocol version %s (only in 2025-03-26)", v))
		return
	}
	if len(parts) > maxBatch {
		// One POST must not fan out without bound: the limits below count each request, but a batch of 20,000
		// would still be 20,000 calls at once for a caller with no limits configured.
		writeError(w, http.StatusBadRequest, nil, protocol.CodeInvalidRequest, fmt.Sprintf("a batch may hold at most %d messages; this one has %d: split it", maxBatch, len(parts)))
		return
	}
	var requests []jsonrpc.Message
	var errs [][]byte
	key := h.limits.limitKey(r)
	var releases []func()
	defer func() {
		for _, release := range releases {
			release()
		}
	}()
	for _, part := range parts {
		m, err := jsonrpc.Parse(part)
		switch {
		case err != nil && errors.Is(err, jsonrpc.ErrParse):
			errs = append(errs, jsonrpc.AppendError(nil, nil, protocol.CodeParseError, "parse error: "+err.Error(), nil))
		case err != nil:
			errs = append(errs, jsonrpc.AppendError(nil, nil, protocol.CodeInvalidRequest, "invalid request: "+err.Error(), nil))
		case m.MethodIs("initialize"):
			errs = append(errs, jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest, "initialize must not be part of a batch", nil))
		case m.Kind() == jsonrpc.KindNotification:
			sess.HandleNotification(m)
		case m.Kind() == jsonrpc.KindResponse:
			sess.HandleResponse(m)
		default:
			// Each request of a batch counts against the limits as if it came alone, and a refused one gets its
			// own error in the batch's answer while the others run. JSON-RPC answers a batch request by request:
			// "A Response object SHOULD exist for each Request object", an error one for a request that failed,
			// so a 429 for the whole batch would refuse the requests within the limits too. Calls over
			// concurrentCalls are refused, not queued: a batch holds no request waiting for another's lease.
			release, refused := h.limits.check(r.Context(), key, m)
			if refused != nil {
				errs = append(errs, refused.answer(m))
				continue
			}
			releases = append(releases, release)
			requests = append(requests, m)
		}
	}
	if len(requests) == 0 && len(errs) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out := h.sessions.NewStream(len(requests)+len(errs), 0)
	for _, e := range errs {
		out.Push(e, routing.ClassFinal)
	}
	ids := make([][]byte, 0, len(requests))
	for _, m := range requests {
		ids = append(ids, m.ID())
		sess.HandleRequest(r.Context(), m, out)
	}
	h.respond(w, r, sess, out, true, ids)
}

// respond writes a request's answer (ids are the requests'): plain JSON when the response is all there is, an SSE stream as soon as
// anything (progress, logs, a server→client request) precedes it. Deciding on the first message gives clients
// the cheap JSON answer whenever possible and the stream whenever needed.
func (h *streamable) respond(w http.ResponseWriter, r *http.Request, sess *routing.Session, out *routing.Stream, batch bool, ids [][]byte) {
	ctx := r.Context()
	sess.StreamOpened()
	defer sess.StreamClosed()
	var held [][]byte
	for sseFirst := prefersSSE(r); ; sseFirst = false {
		var msg []byte
		if !sseFirst {
			var final, ok bool
			if msg, final, ok = out.Next(ctx); !ok {
				break
			}
			if final {
				held = append(held, msg)
				continue
			}
		}
		if msg != nil {
			held = append(held, msg)
		}
		h.hub.respondStream(ctx, w, sess, out, held, ids)
		return
	}
	switch {
	case ctx.Err() != nil:
		out.Close() // nobody will read the JSON answer; routing stops queueing for this client
	case len(held) == 0:
		// Every request of the stream was cancelled: the spec says no response is sent, so the stream just ends.
		h.hub.startSSE(w, sess, nil)
	case !batch:
		writeJSON(w, http.StatusOK, held[0])
	default:
		n := 2
		for _, f := range held {
			n += len(f) + 1
		}
		b := make([]byte, 0, n)
		b = append(b, '[')
		for i, f := range held {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, f...)
		}
		writeJSON(w, http.StatusOK, append(b, ']'))
	}
}

// get opens the standalone stream for messages unrelated to any request (list changes, logs, server→client
// requests with no request to travel with), or, with Last-Event-ID, resumes a stream that lost its connection.
func (h *streamable) get(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		writeError(w, http.StatusNotAcceptable, nil, protocol.CodeInvalidRequest, "the Accept header must list text/event-stream")
		return
	}
	sess, ok := h.session(w, r)
	if !ok {
		return
	}
	last := r.Header.Get("Last-Event-ID")
	var lg streamLog
	var src *routing.Stream
	from := streamStart{replay: true}
	if ss := h.hub.streams.of(sess); h.hub.events == nil || ss.holds(last) {
		rs := ss.get(standaloneStream)
		// An id we did not mint, or of a stream long finished, resumes nothing: the client gets the standalone
		// stream, which is what a GET without the header would give it.
		if stream, _, ok := parseEventID(last); ok {
			if found := ss.get(stream); found != nil {
				rs, from.after = found, last
			}
		}
		lg, src = rs, rs.src
	} else {
		lg, from.after = h.hub.sharedStreamFor(sess, last)
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	// A client resuming a POST stream has left its old connection, though the server may not have seen it drop:
	// it takes the stream over. The standalone stream is refused while another connection reads it.
	if err := lg.Claim(ctx, lg.stream() != standaloneStream, stop); err != nil {
		writeError(w, http.StatusConflict, nil, protocol.CodeInvalidRequest, err.Error())
		return
	}
	sess.StreamOpened()
	defer sess.StreamClosed()
	sw := h.hub.startSSE(w, sess, nil)
	lg.Release(src, h.hub.pump(ctx, sess, sw, lg, src, from))
}

// delete ends a session at the client's request.
func (h *streamable) delete(w http.ResponseWriter, r *http.Request) {
	sess, ok := h.session(w, r)
	if !ok {
		return
	}
	sess.End()
	w.WriteHeader(http.StatusNoContent)
}

// sseWriter writes events to one client stream, each flushed and bounded by a write deadline so a stalled client
// loses its stream instead of holding a goroutine forever.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// primingRetry is the reconnection delay announced to clients of 2025-11-25, which reconnect with GET and
// Last-Event-ID when the server ends a stream's connection early (SEP-1699).
const primingRetry = time.Second

func (sw *sseWriter) event(id string, data []byte) error {
	sw.buf = sse.AppendEvent(sw.buf[:0], sse.Event{ID: id, Name: "message", Data: data})
	return sw.write()
}

func (sw *sseWriter) comment(text string) error {
	sw.buf = sse.AppendComment(sw.buf[:0], text)
	return sw.write()
}

func (sw *sseWriter) write() error {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	if _, err := sw.w.Write(sw.buf); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// prefersSSE reports whether the client lists text/event-stream before application/json in Accept. Both are
// required, and order carries no weight in HTTP, but a client that puts the stream first is telling us which it
// would rather read; everyone else gets the cheaper JSON answer whenever nothing precedes it.
func prefersSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "text/event-stream":
				return true
			case "application/json":
				return false
			}
		}
	}
	return false
}

// accepts reports whether the request's Accept header admits the media type.
func accepts(r *http.Request, mediaType string) bool {
	vals := r.Header.Values("Accept")
	if len(vals) == 0 {
		return false
	}
	major, _, _ := strings.Cut(mediaType, "/")
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt == mediaType || mt == "*/*" || mt == major+"/*" {
				return true
			}
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with an HTTP status and a JSON-RPC error body (id null when the request's id is unknown,
// as the spec allows).
func writeError(w http.ResponseWriter, status int, id []byte, code int, msg string) {
	writeJSON(w, status, jsonrpc.AppendError(nil, id, code, msg, nil))
}

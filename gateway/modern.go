package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The 2026-07-28 front end (design §6): the same /mcp endpoint serves stateless clients beside the legacy ones. A
// request is modern when it says so in the MCP-Protocol-Version header, or carries the era's _meta without a
// session. Each request stands alone: its version, capabilities and log level travel in params._meta, its SSE
// stream carries only what relates to it, and closing that stream is its cancellation.

// isModern reports whether a request belongs to the stateless era.
func isModern(r *http.Request, m jsonrpc.Message) bool {
	if r.Header.Get(protocol.HeaderProtocolVersion) == protocol.Modern {
		return true
	}
	if r.Header.Get(protocol.HeaderSessionID) != "" || m.Kind() != jsonrpc.KindRequest {
		return false
	}
	_, _, ok := jsonrpc.Lookup(m.Params(), "_meta", protocol.MetaProtocolVersion)
	return ok
}

// unsupportedVersion answers a request for a protocol version the gateway does not speak: "400 Bad Request and an
// UnsupportedProtocolVersionError listing its supported versions".
func unsupportedVersion(w http.ResponseWriter, id []byte, requested string) {
	writeJSON(w, http.StatusBadRequest, unsupportedVersionError(id, requested))
}

// unsupportedVersionError is the UnsupportedProtocolVersionError of a request for a version the gateway does not
// speak: "-32022, with data.supported and data.requested", so that the client can retry with one it lists.
func unsupportedVersionError(id []byte, requested string) []byte {
	data, _ := json.Marshal(map[string]any{"supported": protocol.Supported(), "requested": requested})
	return jsonrpc.AppendError(nil, id, protocol.CodeUnsupportedProtocolVersion,
		fmt.Sprintf("unsupported protocol version %q; supported: %s", requested, strings.Join(protocol.Supported(), ", ")), data)
}

// modernMeta is what a stateless request declares in params._meta.
type modernMeta struct {
	version    string
	caps       json.RawMessage
	clientInfo json.RawMessage
	logLevel   string
}

// metaError is a 2026-07-28 request's _meta refused: "a request missing required _meta fields gets -32602".
type metaError struct{ msg string }

// readModernMeta reads and checks what a stateless request declares in params._meta: its version (a string), the
// client's capabilities (an object) and info, bounded in size, and a valid log level. Whether the version is one
// the gateway speaks is the caller's to judge, after the transport's own checks (HTTP compares its headers first;
// stdio has none: "There is no header layer").
func readModernMeta(params []byte) (modernMeta, *metaError) {
	var meta modernMeta
	var obj []byte
	// Only _meta is read, in one pass over its bytes: this runs on every request, and the arguments may be large.
	if st, e, status := jsonrpc.LookupStatus(params, "_meta"); status == jsonrpc.Found {
		obj = params[st:e]
	} else if status == jsonrpc.Ambiguous || status == jsonrpc.Malformed && len(params) > 0 {
		return meta, &metaError{"params must be an object with one _meta member"}
	}
	missing := &metaError{fmt.Sprintf("params._meta must carry %q and %q in protocol version %s",
		protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.Modern)}
	if obj == nil {
		return meta, missing
	}
	sp, ok := jsonrpc.LookupMembers(obj, protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo, protocol.MetaLogLevel)
	if !ok {
		if !isObject(obj) {
			return meta, &metaError{"params._meta must be an object"}
		}
		return meta, &metaError{"params._meta must name each of its members once"}
	}
	v, caps, info, lv := sp[0], sp[1], sp[2], sp[3]
	if !v.Found || !caps.Found {
		return meta, missing
	}
	// Each distinct capabilities object gets a pooled session that keeps it, and the client info of the request
	// that started it: bound what one request may pin. Real clients send well under 1 KiB of each.
	for _, m := range []struct {
		name string
		span jsonrpc.Span
	}{{protocol.MetaClientCapabilities, caps}, {protocol.MetaClientInfo, info}} {
		if n := m.span.End - m.span.Start; n > maxCapabilitiesBytes {
			return meta, &metaError{fmt.Sprintf("params._meta[%q] is %d bytes; at most %d are accepted", m.name, n, maxCapabilitiesBytes)}
		}
	}
	version, err := jsonrpc.Unquote(obj[v.Start:v.End])
	if err != nil || !isObject(obj[caps.Start:caps.End]) {
		return meta, &metaError{fmt.Sprintf("params._meta[%q] must be a string and params._meta[%q] an object",
			protocol.MetaProtocolVersion, protocol.MetaClientCapabilities)}
	}
	meta.version, meta.caps = version, obj[caps.Start:caps.End]
	if info.Found {
		meta.clientInfo = obj[info.Start:info.End]
	}
	if lv.Found {
		level, err := jsonrpc.Unquote(obj[lv.Start:lv.End])
		if err != nil || !validLogLevel(level) {
			return meta, &metaError{fmt.Sprintf("params._meta[%q] must be one of debug, info, notice, warning, error, critical, alert, emergency", protocol.MetaLogLevel)}
		}
		meta.logLevel = level
	}
	return meta, nil
}

// checkModern validates a stateless request's headers against its body. It answers the request itself, and
// reports false, when they are missing or disagree.
func checkModern(w http.ResponseWriter, r *http.Request, m jsonrpc.Message) (modernMeta, bool) {
	id, params := m.ID(), m.Params()
	hv := r.Header.Get(protocol.HeaderProtocolVersion)
	if hv == "" {
		writeError(w, http.StatusBadRequest, id, protocol.CodeHeaderMismatch, "the MCP-Protocol-Version header is required and must equal params._meta[\""+protocol.MetaProtocolVersion+"\"]")
		return modernMeta{}, false
	}
	meta, bad := readModernMeta(params)
	if bad != nil {
		writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, bad.msg)
		return meta, false
	}
	if meta.version != hv {
		writeError(w, http.StatusBadRequest, id, protocol.CodeHeaderMismatch, fmt.Sprintf("the MCP-Protocol-Version header (%q) does not match params._meta[%q] (%q)", hv, protocol.MetaProtocolVersion, meta.version))
		return meta, false
	}
	if hv != protocol.Modern {
		unsupportedVersion(w, id, hv)
		return meta, false
	}
	if got := r.Header.Get(protocol.HeaderMethod); got != m.Method() {
		writeError(w, http.StatusBadRequest, id, protocol.CodeHeaderMismatch, fmt.Sprintf("the Mcp-Method header (%q) must equal the request's method (%q)", got, m.Method()))
		return meta, false
	}
	var want string
	var named bool
	switch m.Method() {
	case "tools/call", "prompts/get":
		want, named = jsonrpc.LookupString(params, "name")
	case "resources/read":
		want, named = jsonrpc.LookupString(params, "uri")
	case "tasks/get", "tasks/update", "tasks/cancel":
		// SEP-2663: these "MUST carry Mcp-Name: <taskId>", so that a balancer can route by the task.
		want, named = jsonrpc.LookupString(params, "taskId")
	}
	if named {
		got, ok := decodeHeaderValue(r.Header.Get(protocol.HeaderName))
		if !ok || got != want {
			writeError(w, http.StatusBadRequest, id, protocol.CodeHeaderMismatch, fmt.Sprintf("the Mcp-Name header must equal the request's name, uri or taskId (%q)", want))
			return meta, false
		}
	}
	return meta, true
}

// decodeHeaderValue reads a header that must be present, undoing the "=?base64?…?=" encoding.
func decodeHeaderValue(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	return unencodeHeader(v)
}

func isObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{")
}

func validLogLevel(v string) bool {
	switch v {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

// modernFront serves the 2026-07-28 requests, from POST /mcp (post) and from stdio (stdioModern): each on the
// pooled session of its capabilities and caller, its answer decorated with the era's fields. A retry of a call
// parked on another replica is sent there (replica.go).
type modernFront struct {
	sessions  Sessions
	offer     Offering
	peers     replicas
	who       callers
	limits    *callerLimits
	hub       *streamHub // starts the SSE answers
	initWait  time.Duration
	keepAlive time.Duration
	listTTL   time.Duration // Options.ListCacheTTL
	authOn    bool          // results may be a caller's own: private unless a list's hint says otherwise
	log       *slog.Logger
	// peerClient sends stateless retries to the replica that holds their call (replica.go); no overall timeout,
	// because the answer may be a stream.
	peerClient *http.Client
}

// post serves one request of a stateless client.
func (f *modernFront) post(ctx context.Context, w http.ResponseWriter, r *http.Request, m jsonrpc.Message) {
	switch m.Kind() {
	case jsonrpc.KindNotification:
		// Over HTTP a stateless client cancels by closing the stream; there is nothing else it may notify.
		w.WriteHeader(http.StatusAccepted)
		return
	case jsonrpc.KindResponse:
		writeError(w, http.StatusBadRequest, m.ID(), protocol.CodeInvalidRequest, "a "+protocol.Modern+" client does not send responses: the server asks for input in input_required results")
		return
	}
	meta, ok := checkModern(w, r, m)
	if !ok {
		return
	}
	release, ok := f.limits.admit(w, r, m)
	if !ok {
		return
	}
	defer release()
	params := f.params(ctx, meta)
	switch m.Method() {
	case "server/discover":
		writeJSON(w, http.StatusOK, f.discover(ctx, m.ID()))
		return
	case "subscriptions/listen":
		f.listen(ctx, w, r, m, params)
		return
	}
	if f.retryElsewhere(ctx, w, r, m) {
		return
	}
	_ = f.sessions.WaitStart(ctx, m.Method(), f.initWait) // during start, until the catalog is whole (as initialize)
	sess := f.sessions.PooledSession(params)
	if m.MethodIs("tools/call") {
		name, _ := jsonrpc.LookupString(m.Params(), "name")
		if why := checkParamHeaders(r.Header, m.Params(), sess.ParamHeaders(name)); why != "" {
			writeError(w, http.StatusBadRequest, m.ID(), protocol.CodeHeaderMismatch, why)
			return
		}
	}
	// The pooled session serves many clients whose ids may collide; it tells their calls apart by the stream each
	// answer goes to, so the request goes on with the client's own id.
	out := f.sessions.NewStream(1, 0)
	pctx := ownPolicy(ctx, params)
	before := f.listHint(pctx, sess, m.Method())
	sess.HandleRequest(pctx, m, out)
	f.respond(w, r, sess, out, m.ID(), m.Method(), func() cacheHint { return before.and(f.listHint(pctx, sess, m.Method())) })
}

// ownPolicy makes a stateless request judged by its own caller's policy: the pooled session may serve another
// request of the same person, with other claims, at the same time. Without a policy (no auth) there is nothing to
// tell apart, and the session's cached search statistics stay valid across requests.
func ownPolicy(ctx context.Context, params routing.SessionParams) context.Context {
	if params.Allow == nil {
		return ctx
	}
	return routing.WithAllow(ctx, params.Allow)
}

// params are the session parameters of a stateless request: what its _meta declares, and its caller.
func (f *modernFront) params(ctx context.Context, meta modernMeta) routing.SessionParams {
	who := f.who.identify(ctx)
	return routing.SessionParams{
		Capabilities: meta.caps, ClientInfo: meta.clientInfo, LogLevel: meta.logLevel,
		Principal: who.Key, Allow: who.Allow, Context: who.Context, Endpoint: EndpointFrom(ctx),
	}
}

// discover answers server/discover: "Servers MUST implement server/discover". It is answered at once, during
// start too (a client's probe gives up within a second); the requests that read the catalog wait (WaitStart).
func (f *modernFront) discover(ctx context.Context, id []byte) []byte {
	return jsonrpc.AppendResult(nil, id, f.decorate(f.discoverResult(), "server/discover", cacheHint{}))
}

// discoverResult is the gateway's DiscoverResult: every version it speaks and the capabilities it can honour.
func (f *modernFront) discoverResult() []byte {
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(f.offer.Capabilities(), &caps)
	// 2026-07-28 moved tasks to the io.modelcontextprotocol/tasks extension: a server "MUST NOT continue to
	// advertise the legacy capabilities".
	delete(caps, "tasks")
	if f.offer.OffersTasks() {
		var ext map[string]json.RawMessage
		_ = json.Unmarshal(caps["extensions"], &ext)
		if ext == nil {
			ext = map[string]json.RawMessage{}
		}
		ext[routing.ExtensionTasks] = json.RawMessage(`{}`)
		caps["extensions"], _ = json.Marshal(ext)
	}
	c, _ := json.Marshal(caps)
	res := map[string]any{"supportedVersions": protocol.Supported(), "capabilities": json.RawMessage(c)}
	if in := f.offer.Instructions(); in != "" {
		res["instructions"] = in
	}
	b, _ := json.Marshal(res)
	return b
}

// cacheable are the methods whose complete results carry ttlMs and cacheScope (server/utilities/caching.mdx).
func cacheable(method string) bool {
	switch method {
	case "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// cacheHint is what the caching fields of a list's answer say (listHint); the zero value, for everything else,
// says ttlMs 0.
type cacheHint struct {
	// list: the answer is a list's, and private and ttl are known.
	list    bool
	private bool
	ttl     time.Duration
}

// listHint is the caching a list request's answer may announce: listCacheTTL, never longer than the upstreams'
// own lists say, "private" when the caller shaped the list (a policy, a person's own lists, search mode;
// routing.Session.ListCache), else "public": the list is what everyone at the endpoint sees. Other methods get
// the zero hint.
func (f *modernFront) listHint(ctx context.Context, sess *routing.Session, method string) cacheHint {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
	default:
		return cacheHint{}
	}
	private, upTTL, capped := sess.ListCache(ctx, method)
	ttl := f.listTTL
	if capped {
		ttl = min(ttl, upTTL)
	}
	return cacheHint{list: true, private: private, ttl: ttl}
}

// and is both hints: the answer is private if either says so, fresh for the shorter time. A list's hint is taken
// before its request and after its answer, so that lists of its own the session gained or lost meanwhile count.
func (h cacheHint) and(o cacheHint) cacheHint {
	if !h.list || !o.list {
		return cacheHint{}
	}
	return cacheHint{list: true, private: h.private || o.private, ttl: min(h.ttl, o.ttl)}
}

// decorate adds what a 2026-07-28 result carries: resultType, the caching fields, and the server's identity in
// _meta. A list's caching is its hint's. Anything else is immediately stale (ttlMs 0) and, with auth on,
// private: upstream credentials may be the caller's own, so such a result must never be shared across
// principals.
func (f *modernFront) decorate(result []byte, method string, hint cacheHint) []byte {
	// One scan finds every member it touches, and one splice writes the answer: results can be large
	// (resources/read), and this runs on every one.
	sp, ok := jsonrpc.LookupMembers(result, "resultType", "inputRequests", "ttlMs", "cacheScope", "_meta")
	if !ok {
		return result
	}
	resultType, asks, ttl, scope, meta := sp[0], sp[1], sp[2], sp[3], sp[4]
	var insert []byte // members added first in the object
	var edits []jsonrpc.Edit
	add := func(key string, v []byte) {
		insert = append(append(append(jsonrpc.AppendQuote(insert, key), ':'), v...), ',')
	}
	rt := "complete"
	switch {
	case resultType.Found:
		rt, _ = jsonrpc.Unquote(result[resultType.Start:resultType.End])
	case asks.Found:
		rt = "input_required" // a legacy upstream that speaks MRTR in-band answers with inputRequests only
		add("resultType", []byte(`"input_required"`))
	default:
		add("resultType", []byte(`"complete"`))
	}
	if rt == "complete" && cacheable(method) {
		if !ttl.Found {
			add("ttlMs", strconv.AppendInt(nil, hint.ttl.Milliseconds(), 10))
		}
		private := hint.private || !hint.list && f.authOn
		switch {
		case !scope.Found && private:
			add("cacheScope", []byte(`"private"`))
		case !scope.Found:
			add("cacheScope", []byte(`"public"`))
		case private && string(result[scope.Start:scope.End]) != `"private"`:
			edits = append(edits, jsonrpc.Edit{Start: scope.Start, End: scope.End, With: []byte(`"private"`)})
		}
	}
	if meta.Found {
		edits = append(edits, jsonrpc.Edit{Start: meta.Start, End: meta.End,
			With: jsonrpc.SetMember(result[meta.Start:meta.End], protocol.MetaServerInfo, f.offer.ServerInfo())})
	} else {
		add("_meta", append(append(jsonrpc.AppendQuote([]byte(`{`), protocol.MetaServerInfo), ':'), append(f.offer.ServerInfo(), '}')...))
	}
	open := bytes.IndexByte(result, '{') + 1
	if len(insert) > 0 {
		if rest := bytes.TrimLeft(result[open:], " \t\r\n"); len(rest) > 0 && rest[0] == '}' {
			insert = insert[:len(insert)-1] // an empty object: no member follows the inserted ones
		}
		edits = append(edits, jsonrpc.Edit{Start: open, End: open, With: insert})
	}
	slices.SortFunc(edits, func(a, b jsonrpc.Edit) int { return a.Start - b.Start })
	n := len(result)
	for _, e := range edits {
		n += len(e.With) - (e.End - e.Start)
	}
	return jsonrpc.Splice(make([]byte, 0, n), result, edits...)
}

// final turns routing's answer into the client's: the era's error codes and result fields (a list's
// caching by hint), and the HTTP status the error calls for.
func (f *modernFront) final(msg, clientID []byte, method string, hint cacheHint) ([]byte, int) {
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return jsonrpc.AppendError(nil, clientID, protocol.CodeInternalError, "switchboard: malformed answer", nil), http.StatusOK
	}
	if e := m.Error(); e != nil {
		code, _ := m.ErrorCode()
		if code == protocol.CodeResourceNotFound {
			// "-32002 is retired: resource-not-found becomes -32602".
			var v struct {
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}
			_ = json.Unmarshal(e, &v)
			return jsonrpc.AppendError(nil, clientID, protocol.CodeInvalidParams, v.Message, v.Data), http.StatusBadRequest
		}
		return msg, errorStatus(code) // routing answered with the client's id
	}
	return jsonrpc.AppendResult(nil, clientID, f.decorate(m.Result(), method, hint)), http.StatusOK
}

// errorStatus is the HTTP status of a 2026-07-28 error answered as JSON: "unknown method → 404", "missing
// capability → 400", "unsupported version → 400", "malformed _meta → 400".
func errorStatus(code int) int {
	switch code {
	case protocol.CodeMethodNotFound:
		return http.StatusNotFound
	case protocol.CodeInvalidParams, protocol.CodeInvalidRequest, protocol.CodeHeaderMismatch, protocol.CodeMissingCapability, protocol.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// respond writes a stateless request's answer: JSON when the answer is all there is, else an SSE stream of
// the notifications that relate to the request, then the answer, whose caching hint says. The stream is not
// resumable, and closing it cancels the request.
func (f *modernFront) respond(w http.ResponseWriter, r *http.Request, sess *routing.Session, out *routing.Stream, clientID []byte, method string, hint func() cacheHint) {
	ctx := r.Context()
	var sw *sseWriter
	for {
		msg, final, ok := out.Next(ctx)
		if !ok {
			if ctx.Err() != nil {
				// "Closing the SSE response stream is cancellation, and the server MUST treat it that way."
				sess.Cancel(out, clientID, "the client closed the request's stream")
				out.Close()
				return
			}
			if sw == nil {
				f.hub.startSSE(w, sess, nil)
			}
			return
		}
		if final {
			answer, status := f.final(msg, clientID, method, hint())
			if sw == nil {
				writeJSON(w, status, answer)
				return
			}
			_ = sw.event("", answer)
			return
		}
		// Only notifications precede the answer: routing parks a stateless session's server→client requests.
		if sw == nil {
			sw = f.hub.startSSE(w, sess, nil)
		}
		if sw.event("", msg) != nil {
			sess.Cancel(out, clientID, "the client's stream failed")
			out.Close()
			return
		}
	}
}

// maxCapabilitiesBytes bounds a 2026-07-28 request's client capabilities object, and its client info.
const maxCapabilitiesBytes = 16 << 10

// listen serves subscriptions/listen over HTTP: a long-lived SSE stream of the notifications the client asked
// for, after an acknowledgement of what the gateway honours, with comment keep-alives while nothing happens.
func (f *modernFront) listen(ctx context.Context, w http.ResponseWriter, r *http.Request, m jsonrpc.Message, params routing.SessionParams) {
	sub, ack, ok := f.openSubscription(ctx, m, params)
	if !ok {
		writeError(w, http.StatusBadRequest, m.ID(), protocol.CodeInvalidParams, errListenParams)
		return
	}
	defer sub.close()
	sw := f.hub.startSSE(w, sub.sess, nil)
	if sw.event("", ack) != nil {
		return
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, f.keepAlive)
		msg, ok := sub.next(wctx)
		cancel()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-sub.sess.Done():
				// "The server SHOULD end a subscription gracefully by sending a result for the listen request."
				_ = sw.event("", sub.ended())
				return
			default:
			}
			if sw.comment("keep-alive") != nil {
				return
			}
			continue
		}
		if sw.event("", msg) != nil {
			return
		}
	}
}

// errListenParams is the answer to a subscriptions/listen request without a filter.
const errListenParams = "subscriptions/listen needs params.notifications"

// subscription is one subscriptions/listen stream, whichever transport carries it: a listener session of its own
// whose standalone stream hears the list changes and resource updates, filtered by what the client asked for and
// tagged with the subscription id (the listen request's id).
type subscription struct {
	f    *modernFront
	id   []byte
	sess *routing.Session
	want listenFilter
	uris map[string]bool // the resources whose updates an upstream honours
}

// listenFilter is the notifications filter of a subscriptions/listen request.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

// openSubscription starts the subscription of a subscriptions/listen request and returns it with its
// acknowledgement, "the first message on the stream", which lists "the subset the server agreed to honor". ok is
// false when the request has no filter. The caller closes the subscription.
func (f *modernFront) openSubscription(ctx context.Context, m jsonrpc.Message, params routing.SessionParams) (sub *subscription, ack []byte, ok bool) {
	var p struct {
		Notifications *listenFilter `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params(), &p); err != nil || p.Notifications == nil {
		return nil, nil, false
	}
	want := *p.Notifications
	sub = &subscription{f: f, id: m.ID(), sess: f.sessions.Listener(params), want: want, uris: map[string]bool{}}
	honoured := []string{}
	for _, uri := range want.ResourceSubscriptions {
		if !sub.uris[uri] && sub.sess.Subscribe(ctx, uri) {
			sub.uris[uri] = true
			honoured = append(honoured, uri)
		}
	}
	n := map[string]any{}
	if want.ToolsListChanged {
		n["toolsListChanged"] = true
	}
	if want.PromptsListChanged {
		n["promptsListChanged"] = true
	}
	if want.ResourcesListChanged {
		n["resourcesListChanged"] = true
	}
	if len(want.ResourceSubscriptions) > 0 {
		n["resourceSubscriptions"] = honoured
	}
	ackParams, _ := json.Marshal(map[string]any{
		"_meta":         map[string]json.RawMessage{protocol.MetaSubscriptionID: sub.id},
		"notifications": n,
	})
	sub.sess.StreamOpened()
	return sub, jsonrpc.AppendNotification(nil, "notifications/subscriptions/acknowledged", ackParams), true
}

// next returns the subscription's next notification, tagged. ok is false when ctx ends or the subscription's
// session does (the gateway tore it down).
func (sub *subscription) next(ctx context.Context) (msg []byte, ok bool) {
	for {
		raw, _, ok := sub.sess.Standalone().Next(ctx)
		if !ok {
			return nil, false
		}
		nm, err := jsonrpc.Parse(raw)
		if err != nil || nm.Kind() != jsonrpc.KindNotification {
			continue
		}
		// "The server MUST NOT send notification types the client has not explicitly requested."
		var wanted bool
		switch nm.Method() {
		case "notifications/tools/list_changed":
			wanted = sub.want.ToolsListChanged
		case "notifications/prompts/list_changed":
			wanted = sub.want.PromptsListChanged
		case "notifications/resources/list_changed":
			wanted = sub.want.ResourcesListChanged
		case "notifications/resources/updated":
			uri, _ := jsonrpc.LookupString(nm.Params(), "uri")
			wanted = sub.uris[uri]
		}
		if wanted {
			return tagSubscription(nm, sub.id), true
		}
	}
}

// ended is the result that ends the subscription gracefully: "this result is sent only when the server tears the
// subscription down".
func (sub *subscription) ended() []byte {
	return jsonrpc.AppendResult(nil, sub.id, sub.f.decorate([]byte(`{}`), "subscriptions/listen", cacheHint{}))
}

// close ends the subscription: its session, and the upstream subscriptions it holds.
func (sub *subscription) close() {
	sub.sess.StreamClosed()
	sub.sess.Close()
}

// tagSubscription adds the subscription id to a notification's _meta: "every later notification carries
// _meta[io.modelcontextprotocol/subscriptionId]".
func tagSubscription(m jsonrpc.Message, id []byte) []byte {
	var params map[string]json.RawMessage
	_ = json.Unmarshal(m.Params(), &params)
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(params["_meta"], &meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[protocol.MetaSubscriptionID] = id
	params["_meta"], _ = json.Marshal(meta)
	b, _ := json.Marshal(params)
	return jsonrpc.AppendNotification(nil, m.Method(), b)
}

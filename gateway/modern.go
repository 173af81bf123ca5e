package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

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
	data, _ := json.Marshal(map[string]any{"supported": protocol.Supported(), "requested": requested})
	writeJSON(w, http.StatusBadRequest, jsonrpc.AppendError(nil, id, protocol.CodeUnsupportedProtocolVersion,
		fmt.Sprintf("unsupported protocol version %q; supported: %s", requested, strings.Join(protocol.Supported(), ", ")), data))
}

// modernMeta is what a stateless request declares in params._meta.
type modernMeta struct {
	version    string
	caps       json.RawMessage
	clientInfo json.RawMessage
	logLevel   string
}

// checkModern validates a stateless request's headers against its body. It answers the request itself, and
// reports false, when they are missing or disagree.
func checkModern(w http.ResponseWriter, r *http.Request, m jsonrpc.Message) (modernMeta, bool) {
	id, params := m.ID(), m.Params()
	var meta modernMeta
	hv := r.Header.Get(protocol.HeaderProtocolVersion)
	if hv == "" {
		writeError(w, http.StatusBadRequest, id, protocol.CodeHeaderMismatch, "the MCP-Protocol-Version header is required and must equal params._meta[\""+protocol.MetaProtocolVersion+"\"]")
		return meta, false
	}
	var raw struct {
		Meta map[string]json.RawMessage
	}
	// Only _meta is decoded: the arguments may be large, and nothing here needs them.
	if st, e, status := jsonrpc.LookupStatus(params, "_meta"); status == jsonrpc.Found {
		if err := json.Unmarshal(params[st:e], &raw.Meta); err != nil {
			writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, "params._meta must be an object")
			return meta, false
		}
	} else if status == jsonrpc.Ambiguous || status == jsonrpc.Malformed && len(params) > 0 {
		writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, "params must be an object with one _meta member")
		return meta, false
	}
	v, okV := raw.Meta[protocol.MetaProtocolVersion]
	caps, okC := raw.Meta[protocol.MetaClientCapabilities]
	if raw.Meta == nil || !okV || !okC {
		writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, fmt.Sprintf("params._meta must carry %q and %q in protocol version %s",
			protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.Modern))
		return meta, false
	}
	// Each distinct capabilities object gets a pooled session that keeps it, and the client info of the request
	// that started it: bound what one request may pin. Real clients send well under 1 KiB of each.
	for _, member := range []string{protocol.MetaClientCapabilities, protocol.MetaClientInfo} {
		if n := len(raw.Meta[member]); n > maxCapabilitiesBytes {
			writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, fmt.Sprintf("params._meta[%q] is %d bytes; at most %d are accepted",
				member, n, maxCapabilitiesBytes))
			return meta, false
		}
	}
	if json.Unmarshal(v, &meta.version) != nil || !isObject(caps) {
		writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, fmt.Sprintf("params._meta[%q] must be a string and params._meta[%q] an object",
			protocol.MetaProtocolVersion, protocol.MetaClientCapabilities))
		return meta, false
	}
	meta.caps, meta.clientInfo = caps, raw.Meta[protocol.MetaClientInfo]
	if lv, ok := raw.Meta[protocol.MetaLogLevel]; ok {
		if json.Unmarshal(lv, &meta.logLevel) != nil || !validLogLevel(meta.logLevel) {
			writeError(w, http.StatusBadRequest, id, protocol.CodeInvalidParams, fmt.Sprintf("params._meta[%q] must be one of debug, info, notice, warning, error, critical, alert, emergency", protocol.MetaLogLevel))
			return meta, false
		}
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
	}
	if named {
		got, ok := decodeHeaderValue(r.Header.Get(protocol.HeaderName))
		if !ok || got != want {
			writeError(w, http.StatusBadRequest, id, protocol.CodeHeaderMismatch, fmt.Sprintf("the Mcp-Name header must equal the request's name or uri (%q)", want))
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

// postModern serves one request of a stateless client.
func (s *Server) postModern(ctx context.Context, w http.ResponseWriter, r *http.Request, m jsonrpc.Message) {
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
	release, ok := s.admit(w, r, m)
	if !ok {
		return
	}
	defer release()
	who := s.identify(ctx)
	params := routing.SessionParams{
		Capabilities: meta.caps, ClientInfo: meta.clientInfo, LogLevel: meta.logLevel,
		Principal: who.Key, Allow: who.Allow, Context: who.Context, Endpoint: EndpointFrom(ctx),
	}
	switch m.Method() {
	case "server/discover":
		wctx, cancel := context.WithTimeout(ctx, s.opts.InitWait)
		_ = s.r.WaitReady(wctx) // as for initialize: the first client sees the whole catalog
		cancel()
		writeJSON(w, http.StatusOK, jsonrpc.AppendResult(nil, m.ID(), s.decorate(s.discoverResult(), "server/discover")))
		return
	case "subscriptions/listen":
		s.listen(ctx, w, r, m, params)
		return
	}
	if s.retryElsewhere(ctx, w, r, m) {
		return
	}
	sess := s.r.PooledSession(params)
	if m.MethodIs("tools/call") {
		name, _ := jsonrpc.LookupString(m.Params(), "name")
		if why := checkParamHeaders(r.Header, m.Params(), sess.ParamHeaders(name)); why != "" {
			writeError(w, http.StatusBadRequest, m.ID(), protocol.CodeHeaderMismatch, why)
			return
		}
	}
	// The pooled session serves many clients whose ids may collide; it tells their calls apart by the stream each
	// answer goes to, so the request goes on with the client's own id.
	out := s.r.NewStream(1, 0)
	sess.HandleRequest(ctx, m, out)
	s.respondModern(w, r, sess, out, m.ID(), m.Method())
}

// discoverResult is the gateway's DiscoverResult: every version it speaks and the capabilities it can honour.
func (s *Server) discoverResult() []byte {
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(s.r.Capabilities(), &caps)
	delete(caps, "tasks") // 2026-07-28 moved tasks to an extension the gateway does not offer yet
	c, _ := json.Marshal(caps)
	res := map[string]any{"supportedVersions": protocol.Supported(), "capabilities": json.RawMessage(c)}
	if in := s.r.Instructions(); in != "" {
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

// decorate adds what a 2026-07-28 result carries: resultType, the caching fields, and the server's identity in
// _meta. With auth on, every result is private: lists follow the caller's policy and upstream credentials may be
// the caller's own, so a result must never be shared across principals.
func (s *Server) decorate(result []byte, method string) []byte {
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
			add("ttlMs", []byte(`0`))
		}
		switch {
		case !scope.Found && s.opts.Auth != nil:
			add("cacheScope", []byte(`"private"`))
		case !scope.Found:
			add("cacheScope", []byte(`"public"`))
		case s.opts.Auth != nil && string(result[scope.Start:scope.End]) != `"private"`:
			edits = append(edits, jsonrpc.Edit{Start: scope.Start, End: scope.End, With: []byte(`"private"`)})
		}
	}
	if meta.Found {
		edits = append(edits, jsonrpc.Edit{Start: meta.Start, End: meta.End,
			With: jsonrpc.SetMember(result[meta.Start:meta.End], protocol.MetaServerInfo, s.r.ServerInfo())})
	} else {
		add("_meta", append(append(jsonrpc.AppendQuote([]byte(`{`), protocol.MetaServerInfo), ':'), append(s.r.ServerInfo(), '}')...))
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

// modernFinal turns routing's answer into the client's: the era's error codes and result fields, and the HTTP
// status the error calls for.
func (s *Server) modernFinal(msg, clientID []byte, method string) ([]byte, int) {
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
	return jsonrpc.AppendResult(nil, clientID, s.decorate(m.Result(), method)), http.StatusOK
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

// respondModern writes a stateless request's answer: JSON when the answer is all there is, else an SSE stream of
// the notifications that relate to the request, then the answer. The stream is not resumable, and closing it
// cancels the request.
func (s *Server) respondModern(w http.ResponseWriter, r *http.Request, sess *routing.Session, out *routing.Stream, clientID []byte, method string) {
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
				s.startSSE(w, sess, nil)
			}
			return
		}
		if final {
			answer, status := s.modernFinal(msg, clientID, method)
			if sw == nil {
				writeJSON(w, status, answer)
				return
			}
			_ = sw.event("", answer)
			return
		}
		// Only notifications precede the answer: routing parks a stateless session's server→client requests.
		if sw == nil {
			sw = s.startSSE(w, sess, nil)
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

// listen serves subscriptions/listen: a long-lived stream of the notifications the client asked for, each tagged
// with the subscription id (the listen request's id), after an acknowledgement of what the gateway honours.
func (s *Server) listen(ctx context.Context, w http.ResponseWriter, r *http.Request, m jsonrpc.Message, params routing.SessionParams) {
	var p struct {
		Notifications *struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			PromptsListChanged    bool     `json:"promptsListChanged"`
			ResourcesListChanged  bool     `json:"resourcesListChanged"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params(), &p); err != nil || p.Notifications == nil {
		writeError(w, http.StatusBadRequest, m.ID(), protocol.CodeInvalidParams, "subscriptions/listen needs params.notifications")
		return
	}
	want := p.Notifications
	sess := s.r.Listener(params)
	defer sess.Close()
	uris := map[string]bool{}
	honoured := []string{}
	for _, uri := range want.ResourceSubscriptions {
		if !uris[uri] && sess.Subscribe(ctx, uri) {
			uris[uri] = true
			honoured = append(honoured, uri)
		}
	}
	ack := map[string]any{"_meta": map[string]json.RawMessage{protocol.MetaSubscriptionID: m.ID()}}
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
	ack["notifications"] = n
	ackParams, _ := json.Marshal(ack)
	sess.StreamOpened()
	defer sess.StreamClosed()
	sw := s.startSSE(w, sess, nil)
	if sw.event("", jsonrpc.AppendNotification(nil, "notifications/subscriptions/acknowledged", ackParams)) != nil {
		return
	}
	st := sess.Standalone()
	for {
		wctx, cancel := context.WithTimeout(ctx, s.opts.KeepAlive)
		msg, _, ok := st.Next(wctx)
		cancel()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-sess.Done():
				// "The server SHOULD end a subscription gracefully by sending a result for the listen request."
				_ = sw.event("", jsonrpc.AppendResult(nil, m.ID(), s.decorate([]byte(`{}`), "subscriptions/listen")))
				return
			default:
			}
			if sw.comment("keep-alive") != nil {
				return
			}
			continue
		}
		nm, err := jsonrpc.Parse(msg)
		if err != nil || nm.Kind() != jsonrpc.KindNotification {
			continue
		}
		switch nm.Method() {
		case "notifications/tools/list_changed":
			ok = want.ToolsListChanged
		case "notifications/prompts/list_changed":
			ok = want.PromptsListChanged
		case "notifications/resources/list_changed":
			ok = want.ResourcesListChanged
		case "notifications/resources/updated":
			uri, _ := jsonrpc.LookupString(nm.Params(), "uri")
			ok = uris[uri]
		default:
			ok = false
		}
		if !ok {
			continue
		}
		if sw.event("", tagSubscription(nm, m.ID())) != nil {
			return
		}
	}
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

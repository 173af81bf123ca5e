package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// A stateless client has no session to pin it to a replica, so the retry of a multi-round call (design §6) may
// land on any of them, while the upstream call it continues waits on the one that parked it. That replica wrote
// its own URL, sealed, into the requestState; the one the retry reaches sends it there and relays the answer.

// headerForwarded marks a retry one replica sent another, so that it is never sent on again.
const headerForwarded = "Switchboard-Forwarded"

// forwardedHeaders are the request headers a forwarded retry keeps: what the owner needs to authenticate the
// caller and to check the request as the client sent it.
var forwardedHeaders = []string{"Authorization", "Accept", "Content-Type", "Origin", protocol.HeaderProtocolVersion, protocol.HeaderMethod, protocol.HeaderName, "Traceparent", "Tracestate"}

// retryElsewhere sends a stateless retry to the replica that holds its parked call, reporting whether it did
// (false: the call is held here, or nobody knows where; serve it here).
func (f *modernFront) retryElsewhere(ctx context.Context, w http.ResponseWriter, r *http.Request, m jsonrpc.Message) bool {
	switch m.Method() {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return false
	}
	state, ok := jsonrpc.LookupString(m.Params(), "requestState")
	if !ok || !f.peers.OwnsState(state) || r.Header.Get(headerForwarded) != "" {
		return false
	}
	owner, err := f.peers.StateOwner(ctx, f.who.key(ctx), m, state)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, m.ID(), protocol.CodeInternalError, "switchboard: the replica holding this call cannot be looked up right now; retry shortly")
		return true
	}
	if owner == "" {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, owner, bytes.NewReader(m.Raw()))
	if err != nil {
		writeError(w, http.StatusBadGateway, m.ID(), protocol.CodeInternalError, "switchboard: the replica holding this call cannot be reached; call again without requestState")
		return true
	}
	for _, k := range forwardedHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	for k, v := range r.Header {
		if strings.HasPrefix(k, protocol.HeaderParamPrefix) {
			req.Header[k] = v
		}
	}
	req.Host = r.Host // the owner checks Host against DNS rebinding like any request
	req.Header.Set(headerForwarded, "1")
	resp, err := f.peerClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("retry not forwarded to the replica holding its call", "replica", owner, "err", err)
			writeError(w, http.StatusBadGateway, m.ID(), protocol.CodeInternalError, "switchboard: the replica holding this call cannot be reached; call again without requestState")
		}
		return true
	}
	defer resp.Body.Close()
	for _, k := range []string{"Content-Type", "Cache-Control", "X-Accel-Buffering"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return true // the client left: its context ends the forwarded request, which cancels the call
			}
			_ = rc.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				f.log.Debug("forwarded retry ended early", "replica", owner, "err", err)
			}
			return true
		}
	}
}

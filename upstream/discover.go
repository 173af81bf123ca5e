package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

const (
	methodDiscover = "server/discover"

	// stdioProbeTimeout bounds the wait for the answer to server/discover on
	// stdio. "Legacy protocol revisions never specified how a server
	// responds to an unknown request received before initialize": some
	// never answer, and "no response within a timeout" means legacy. The
	// wait is paid once per Transport (the verdict is cached), so it can
	// afford a child that is slow to start (a modern one that answers late
	// would be taken for legacy); and a legacy server that does answer, as
	// most do, answers at once. It is also capped at half of what is left
	// of Dial's context, so that the fallback initialize keeps time.
	stdioProbeTimeout = 3 * time.Second
	// httpProbeTimeout bounds the probe over HTTP, where every server
	// answers a POST (a legacy one with an error status), so it is only a
	// safety net against a server that holds the POST open.
	httpProbeTimeout = 10 * time.Second
	// maxDiscoverAttempts: one retry after a -32022 that lists our version
	// as supported (a transient disagreement, such as a header a proxy
	// rewrote), never a loop.
	maxDiscoverAttempts = 2
)

// discoverIDs are our probe requests' ids: strings, so they cannot collide
// with the integer ids the gateway mints, and a new one per attempt ("MUST
// NOT match the ID of any other request the sender has issued and not yet
// received a response for").
var discoverIDs = [maxDiscoverAttempts]string{`"switchboard-discover-1"`, `"switchboard-discover-2"`}

// probeResult is what a server/discover probe found.
type probeResult struct {
	modern bool
	hello  ServerHello // when modern
	// why says why the upstream is taken for legacy, for logs and errors.
	why string
	// pending is the id of a discover request left unanswered (timeout); a
	// late answer must be ignored.
	pending []byte
	// ended: the connection ended during the probe (a legacy stdio child
	// may exit on an unknown request); the fallback needs a new one.
	ended bool
}

// probeBound returns how long the probe may wait: base, or half of what is
// left of ctx if that is less.
func probeBound(ctx context.Context, base time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if half := time.Until(dl) / 2; half < base {
			return max(half, 0)
		}
	}
	return base
}

// probe sends server/discover on conn and classifies the answer, per the
// specification's backward-compatibility rule: "a recognized modern JSON-RPC
// error (such as UnsupportedProtocolVersionError) identifies a modern
// server: the client retries with a supported version rather than falling
// back. Anything else identifies a legacy server." A server is modern only
// if it lists protocol.Modern among its supportedVersions: the Go
// SDK's stateful HTTP handler answers discover too, listing only legacy
// versions. The returned error is Dial's context ending; every other
// failure is a legacy verdict.
func probe(ctx context.Context, conn Connection, log *slog.Logger, meta *requestMeta, bound time.Duration) (probeResult, error) {
	pctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	params := meta.discoverParams()
	for attempt := range maxDiscoverAttempts {
		id := []byte(discoverIDs[attempt])
		if err := writeBuilt(pctx, conn, jsonrpc.AppendRequest(nil, id, methodDiscover, params)); err != nil {
			if ctx.Err() != nil {
				return probeResult{}, ctx.Err()
			}
			if pctx.Err() != nil {
				return probeResult{why: "server/discover could not be sent in time", pending: id}, nil
			}
			return probeResult{why: fmt.Sprintf("server/discover could not be sent: %v", err), ended: true}, nil
		}
		resp, err := awaitResponse(pctx, conn, log, id)
		switch {
		case ctx.Err() != nil:
			return probeResult{}, ctx.Err()
		case pctx.Err() != nil:
			return probeResult{why: fmt.Sprintf("no answer to server/discover within %v", bound.Round(time.Millisecond)), pending: id}, nil
		case err != nil:
			return probeResult{why: fmt.Sprintf("the connection ended during server/discover: %v", err), ended: true}, nil
		}
		if e := resp.Error(); e != nil {
			if retryDiscover(resp) && attempt+1 < maxDiscoverAttempts {
				log.Debug("server/discover refused our protocol version but lists it as supported; retrying")
				continue
			}
			return probeResult{why: "server/discover failed: " + describeRPCError(e)}, nil
		}
		sh, err := parseDiscoverResult(resp.Result())
		if err != nil {
			return probeResult{why: fmt.Sprintf("bad server/discover result: %v", err)}, nil
		}
		if !slices.Contains(sh.SupportedVersions, protocol.Modern) {
			return probeResult{why: fmt.Sprintf("server/discover lists only %q", sh.SupportedVersions)}, nil
		}
		return probeResult{modern: true, hello: sh}, nil
	}
	return probeResult{why: "server/discover kept refusing our protocol version"}, nil
}

// awaitResponse reads conn until the response to id. Before a handshake,
// requests get the same treatment as during initialize (ping answered, the
// rest refused) and notifications are dropped.
func awaitResponse(ctx context.Context, conn Connection, log *slog.Logger, id []byte) (jsonrpc.Message, error) {
	for {
		in, err := conn.Read(ctx)
		if err != nil {
			return jsonrpc.Message{}, err
		}
		switch m := in.Msg; m.Kind() {
		case jsonrpc.KindResponse:
			if sameID(m.ID(), id) {
				return m, nil
			}
			log.Debug("dropping unexpected response during server/discover")
		case jsonrpc.KindRequest:
			if err := answerEarlyRequest(ctx, conn, m); err != nil {
				return jsonrpc.Message{}, err
			}
		case jsonrpc.KindNotification:
			log.Debug("dropping notification sent during server/discover", "method", m.Method())
		}
	}
}

// retryDiscover reports whether a discover error is a -32022 whose
// data.supported lists protocol.Modern.
func retryDiscover(resp jsonrpc.Message) bool {
	if code, ok := resp.ErrorCode(); !ok || code != protocol.CodeUnsupportedProtocolVersion {
		return false
	}
	var e struct {
		Data struct {
			Supported []string `json:"supported"`
		} `json:"data"`
	}
	return json.Unmarshal(resp.Error(), &e) == nil && slices.Contains(e.Data.Supported, protocol.Modern)
}

// parseDiscoverResult turns a DiscoverResult into a ServerHello. The
// server's identity is in the result's _meta
// (io.modelcontextprotocol/serverInfo, SHOULD); a top-level serverInfo, as
// some drafts had it, is the fallback.
func parseDiscoverResult(result []byte) (ServerHello, error) {
	var r struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		ServerInfo        json.RawMessage `json:"serverInfo"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return ServerHello{}, err
	}
	info := r.Meta.ServerInfo
	if len(info) == 0 || string(info) == "null" {
		info = r.ServerInfo
	}
	return ServerHello{
		ProtocolVersion:   protocol.Modern,
		Capabilities:      r.Capabilities,
		ServerInfo:        info,
		Instructions:      r.Instructions,
		Result:            bytes.Clone(result),
		SupportedVersions: r.SupportedVersions,
	}, nil
}

// dialHTTP is Dial for an HTTP upstream.
func dialHTTP(ctx context.Context, t *HTTPTransport, hello ClientHello) (*Conn, error) {
	spec, log := t.spec, t.spec.logger()
	mode := spec.protocol()
	known, cached := t.eras.get()
	if mode == ProtocolLegacy || (mode == ProtocolAuto && known == eraLegacy) {
		return dialLegacy(ctx, t, hello, &t.eras)
	}
	meta, err := newRequestMeta(hello)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: client hello: %w", spec.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("upstream %s: %w", spec.Name, err)
	}
	sc := t.connectStateless(ctx, meta)
	if known == eraModern {
		return &Conn{Connection: sc, Server: cached}, nil
	}
	sc.quiet.Store(true)
	res, err := probe(ctx, sc, log, meta, probeBound(ctx, httpProbeTimeout))
	sc.quiet.Store(false)
	if err != nil {
		sc.Close()
		return nil, fmt.Errorf("upstream %s: server/discover: %w", spec.Name, err)
	}
	if res.modern {
		t.eras.set(eraModern, res.hello)
		log.Info("upstream speaks the modern protocol; using stateless HTTP", "protocolVersion", protocol.Modern)
		return &Conn{Connection: sc, Server: res.hello}, nil
	}
	sc.Close() // aborts an unanswered probe
	if mode == ProtocolModern {
		return nil, fmt.Errorf("upstream %s: protocol is modern, but the upstream does not speak %s: %s", spec.Name, protocol.Modern, res.why)
	}
	log.Info("upstream does not speak the modern protocol; using initialize", "reason", res.why)
	return dialLegacy(ctx, t, hello, &t.eras)
}

// dialStdio is Dial for a stdio upstream. The probe and the fallback
// initialize share one child process: restarting it would double the start
// cost for every legacy server, and the SDKs survive an unknown request
// before initialize. A child that exits instead is restarted once.
func dialStdio(ctx context.Context, t *CommandTransport, hello ClientHello) (*Conn, error) {
	spec, log := t.spec, t.spec.logger()
	mode := spec.protocol()
	known, cached := t.eras.get()
	if mode == ProtocolLegacy || (mode == ProtocolAuto && known == eraLegacy) {
		return dialLegacy(ctx, t, hello, &t.eras)
	}
	meta, err := newRequestMeta(hello)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: client hello: %w", spec.Name, err)
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := conn.(*stdioConn)
	if known == eraModern {
		sc.meta.Store(meta)
		return &Conn{Connection: sc, Server: cached}, nil
	}
	res, err := probe(ctx, sc, log, meta, probeBound(ctx, stdioProbeTimeout))
	if err != nil {
		sc.Close()
		return nil, fmt.Errorf("upstream %s: server/discover: %w", spec.Name, err)
	}
	switch {
	case res.modern && preferLegacy(spec, res.hello):
		// The initialize handshake on a new child (the Go SDK's server takes a discover as the start of its
		// session, and refuses an initialize after it); the legacy verdict, remembered once it succeeds, spares
		// the later Dials the probe.
		log.Info("upstream speaks both protocol eras; a shared stdio upstream gets initialize", "versions", res.hello.SupportedVersions)
		sc.Close()
		return dialLegacy(ctx, t, hello, &t.eras)
	case res.modern:
		sc.meta.Store(meta)
		t.eras.set(eraModern, res.hello)
		log.Info("upstream speaks the modern protocol; no initialize", "protocolVersion", protocol.Modern)
		return &Conn{Connection: sc, Server: res.hello}, nil
	}
	if mode == ProtocolModern {
		sc.Close()
		return nil, fmt.Errorf("upstream %s: protocol is modern, but the upstream does not speak %s: %s", spec.Name, protocol.Modern, res.why)
	}
	log.Info("upstream does not speak the modern protocol; using initialize", "reason", res.why)
	if res.ended {
		sc.Close()
		if conn, err = t.Connect(ctx); err != nil {
			return nil, err
		}
	} else if res.pending != nil {
		// The handshake drops unexpected responses, and this keeps a
		// discover answer that comes even later from reaching the caller.
		sc.ignoreID.Store(&res.pending)
	}
	return dialStdioLegacy(ctx, t, conn, hello)
}

// dialStdioLegacy performs the initialize handshake on a child started for the probe.
func dialStdioLegacy(ctx context.Context, t *CommandTransport, conn Connection, hello ClientHello) (*Conn, error) {
	spec := t.spec
	params, err := initializeParams(hello)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("upstream %s: initialize params: %w", spec.Name, err)
	}
	return handshakeOn(ctx, t, conn, params, &t.eras)
}

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

const (
	// initRequestID is the id of our initialize request. A string, so it can
	// never collide with the integer ids the gateway mints from 1 upward.
	initRequestID = `"switchboard-init-1"`

	methodInitialize  = "initialize"
	methodInitialized = "notifications/initialized"
)

// ClientHello is what the gateway declares in initialize.
type ClientHello struct {
	// ProtocolVersion is the version offered; empty means
	// protocol.LatestLegacy.
	ProtocolVersion string
	// Capabilities is a ClientCapabilities object; nil means {}.
	Capabilities json.RawMessage
	// ClientInfo is an Implementation object; nil means
	// {"name":"switchboard","version":"dev"}.
	ClientInfo json.RawMessage
	// Legacy, when set, skips era detection for this connection and performs the initialize handshake: a client
	// of the legacy era served by a per-client session of an upstream that speaks both eras is spoken for in its
	// own era, so that the upstream's server→client requests work as they would directly. The transport's cached
	// verdict is neither consulted nor changed.
	Legacy bool
}

// ServerHello is what the upstream answered to initialize, or for a modern
// upstream to server/discover.
type ServerHello struct {
	// ProtocolVersion is the negotiated version; protocol.Modern for a
	// modern upstream.
	ProtocolVersion string
	// Capabilities is the ServerCapabilities object.
	Capabilities json.RawMessage
	// ServerInfo is the Implementation object. A modern upstream names
	// itself in the discover result's _meta
	// ("io.modelcontextprotocol/serverInfo"), or else in serverInfo.
	ServerInfo json.RawMessage
	// Instructions is the optional hint for the model.
	Instructions string
	// Result is the whole InitializeResult (or DiscoverResult), for fields
	// not broken out above.
	Result json.RawMessage
	// SupportedVersions are the versions a modern upstream's discover
	// result lists; nil for a legacy upstream.
	SupportedVersions []string
}

// Modern reports whether the upstream speaks the stateless modern era
// (2026-07-28 and later): no initialize and no session, every request
// carrying its protocol version, client capabilities and client identity in
// params._meta, no server→client requests (input is requested through
// InputRequiredResult instead), subscriptions/listen instead of the GET
// stream, and cancellation by closing the request's stream over HTTP.
func (h ServerHello) Modern() bool {
	return protocol.IsModern(h.ProtocolVersion)
}

// Conn is a connection whose handshake is done.
type Conn struct {
	Connection
	// Server is the upstream's answer to initialize or server/discover.
	Server ServerHello
}

// named is implemented by this package's transports so that Dial's own
// errors and logs can name the upstream.
type named interface {
	upstreamSpec() Spec
}

// identify returns the name and logger of t's upstream.
func identify(t Transport) (string, *slog.Logger) {
	if n, ok := t.(named); ok {
		return n.upstreamSpec().Name, n.upstreamSpec().logger()
	}
	return "?", slog.Default()
}

// Dial connects to the upstream and performs the handshake of its protocol
// era. The ctx bounds the handshake only.
//
// With Spec.Protocol auto (the default), the first Dial probes with
// server/discover; the upstream is modern if the result lists
// protocol.Modern among its supportedVersions. A modern upstream gets
// no initialize: the returned Conn is ready at once, its Server is the
// discover answer (Server.Modern() is true), and every request written
// to it gets the _meta the era requires (the hello's capabilities and
// identity unless the request carries its own). Over HTTP the Connection is
// stateless: one POST per request, no session. Any other answer, or none
// within a bound over stdio, means legacy, and Dial goes on with initialize
// as below. The Transport remembers the verdict (see eraCache), so later
// Dials skip the probe; a modern one then does no I/O at all. "legacy"
// skips the probe, "modern" fails unless the probe finds a modern upstream.
//
// The legacy handshake is initialize, a check that the answered protocol
// version is one we support, then notifications/initialized. Before
// answering initialize the server "SHOULD NOT send requests other than
// pings and logging". Dial answers a ping itself, answers any other request
// with an error, and drops notifications (logged at debug level): nobody is
// reading the connection yet, and nothing sent before the handshake refers
// to later traffic.
func Dial(ctx context.Context, t Transport, hello ClientHello) (*Conn, error) {
	if hello.Legacy {
		return dialLegacy(ctx, t, hello, nil)
	}
	switch t := t.(type) {
	case *HTTPTransport:
		return dialHTTP(ctx, t, hello)
	case *CommandTransport:
		return dialStdio(ctx, t, hello)
	}
	return dialLegacy(ctx, t, hello, nil)
}

// dialLegacy connects and performs the initialize handshake. cache, if set,
// records the legacy verdict once the handshake succeeds.
func dialLegacy(ctx context.Context, t Transport, hello ClientHello, cache *eraCache) (*Conn, error) {
	name, _ := identify(t)
	params, err := initializeParams(hello)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: initialize params: %w", name, err)
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return handshakeOn(ctx, t, conn, params, cache)
}

// handshakeOn performs the initialize handshake on conn, closing it if that
// fails.
func handshakeOn(ctx context.Context, t Transport, conn Connection, params []byte, cache *eraCache) (*Conn, error) {
	name, log := identify(t)
	sh, err := handshake(ctx, conn, name, log, params)
	if err != nil {
		conn.Close()
		if cache != nil && errors.Is(err, ErrInitRejected) {
			// "re-probing if the cached assumption later fails": an upstream
			// that refuses initialize may have become modern-only.
			cache.forgetLegacy()
		}
		return nil, err
	}
	if cache != nil {
		cache.set(eraLegacy, ServerHello{})
	}
	log.Info("upstream initialized", "protocolVersion", sh.ProtocolVersion)
	return &Conn{Connection: conn, Server: sh}, nil
}

// ErrInitRejected is matched (errors.Is) by the error of a handshake whose
// initialize the upstream answered with a JSON-RPC error.
var ErrInitRejected = errors.New("initialize rejected")

// initRejectedError is that error; its text is the upstream's error, and cause the transport's own failure when
// the transport made the answer (Incoming.Err).
type initRejectedError struct {
	msg   string
	cause error
}

func (e *initRejectedError) Error() string        { return e.msg }
func (e *initRejectedError) Is(target error) bool { return target == ErrInitRejected }
func (e *initRejectedError) Unwrap() error        { return e.cause }

func handshake(ctx context.Context, conn Connection, name string, log *slog.Logger, params []byte) (ServerHello, error) {
	req := jsonrpc.AppendRequest(nil, []byte(initRequestID), methodInitialize, params)
	if err := writeBuilt(ctx, conn, req); err != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: send initialize: %w", name, err)
	}
	var resp jsonrpc.Message
	var cause error // the transport's own failure, when it made the answer
	for resp.Kind() == jsonrpc.KindInvalid {
		in, err := conn.Read(ctx)
		if err != nil {
			return ServerHello{}, fmt.Errorf("upstream %s: waiting for initialize response: %w", name, err)
		}
		m := in.Msg
		switch m.Kind() {
		case jsonrpc.KindResponse:
			if sameID(m.ID(), []byte(initRequestID)) {
				resp, cause = m, in.Err
			} else {
				log.Debug("dropping unexpected response during handshake")
			}
		case jsonrpc.KindRequest:
			if err := answerEarlyRequest(ctx, conn, m); err != nil {
				return ServerHello{}, fmt.Errorf("upstream %s: answer %s during handshake: %w", name, m.Method(), err)
			}
		case jsonrpc.KindNotification:
			log.Debug("dropping notification sent before initialize was answered", "method", m.Method())
		}
	}
	if e := resp.Error(); e != nil {
		return ServerHello{}, &initRejectedError{fmt.Sprintf("upstream %s: initialize failed: %s", name, describeRPCError(e)), cause}
	}
	sh, err := parseServerHello(resp.Result())
	if err != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: bad initialize result: %w", name, err)
	}
	// "If the client does not support the version in the server's response,
	// it SHOULD disconnect."
	if !protocol.SupportedLegacy(sh.ProtocolVersion) {
		return ServerHello{}, fmt.Errorf("upstream %s: server chose protocol version %q, which the gateway does not support (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)", name, sh.ProtocolVersion)
	}
	if err := writeBuilt(ctx, conn, jsonrpc.AppendNotification(nil, methodInitialized, nil)); err != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: send %s: %w", name, methodInitialized, err)
	}
	return sh, nil
}

// answerEarlyRequest answers a server request that arrives before the
// handshake is done: a ping with {}, anything else with an error.
func answerEarlyRequest(ctx context.Context, conn Connection, m jsonrpc.Message) error {
	var answer []byte
	if m.MethodIs("ping") {
		answer = jsonrpc.AppendResult(nil, m.ID(), []byte("{}"))
	} else {
		answer = jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest, "client is not initialized yet", nil)
	}
	return writeBuilt(ctx, conn, answer)
}

func initializeParams(h ClientHello) ([]byte, error) {
	p := struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}{h.ProtocolVersion, h.Capabilities, h.ClientInfo}
	if p.ProtocolVersion == "" {
		p.ProtocolVersion = protocol.LatestLegacy
	}
	if len(p.Capabilities) == 0 {
		p.Capabilities = json.RawMessage(defaultClientCapabilities)
	}
	if len(p.ClientInfo) == 0 {
		p.ClientInfo = json.RawMessage(defaultClientInfo)
	}
	return json.Marshal(p) // also validates the raw members
}

func parseServerHello(result []byte) (ServerHello, error) {
	var r struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return ServerHello{}, err
	}
	if r.ProtocolVersion == "" {
		return ServerHello{}, errors.New("no protocolVersion")
	}
	return ServerHello{
		ProtocolVersion: r.ProtocolVersion,
		Capabilities:    r.Capabilities,
		ServerInfo:      r.ServerInfo,
		Instructions:    r.Instructions,
		Result:          bytes.Clone(result),
	}, nil
}

// describeRPCError renders a JSON-RPC error object as "code N: message".
func describeRPCError(e []byte) string {
	var v struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(e, &v) != nil {
		return truncate(e, maxLoggedLine)
	}
	return fmt.Sprintf("code %d: %s", v.Code, v.Message)
}

// sameID reports whether two raw JSON-RPC ids denote the same id. Peers echo
// ids but may re-encode them (escapes, number spelling), so a byte mismatch
// falls back to comparing decoded values.
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 || (a[0] == '"') != (b[0] == '"') {
		return false
	}
	if a[0] == '"' {
		var sa, sb string
		return json.Unmarshal(a, &sa) == nil && json.Unmarshal(b, &sb) == nil && sa == sb
	}
	var na, nb json.Number
	if json.Unmarshal(a, &na) != nil || json.Unmarshal(b, &nb) != nil {
		return false
	}
	// Float comparison is exact for the gateway's ids, which stay below 2^53.
	fa, erra := na.Float64()
	fb, errb := nb.Float64()
	return erra == nil && errb == nil && fa == fb
}

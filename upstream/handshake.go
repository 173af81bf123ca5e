package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

const (
	// initRequestID is the id of our initialize request. A string, so it can
	// never collide with the integer ids the gateway mints from 1 upward.
	initRequestID = `"switchboard-init-1"`
	// LatestProtocolVersion is the protocol version Dial asks for when
	// ClientHello.ProtocolVersion is empty.
	LatestProtocolVersion = "2025-11-25"

	methodInitialize  = "initialize"
	methodInitialized = "notifications/initialized"
)

// SupportedProtocolVersion reports whether v is a protocol version the
// upstream side of the gateway can speak: 2025-11-25, 2025-06-18, 2025-03-26
// or 2024-11-05.
func SupportedProtocolVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		return true
	}
	return false
}

// ClientHello is what the gateway declares in initialize.
type ClientHello struct {
	// ProtocolVersion is the version offered; empty means
	// LatestProtocolVersion.
	ProtocolVersion string
	// Capabilities is a ClientCapabilities object; nil means {}.
	Capabilities json.RawMessage
	// ClientInfo is an Implementation object; nil means
	// {"name":"switchboard","version":"dev"}.
	ClientInfo json.RawMessage
}

// ServerHello is what the upstream answered to initialize.
type ServerHello struct {
	// ProtocolVersion is the negotiated version.
	ProtocolVersion string
	// Capabilities is the ServerCapabilities object.
	Capabilities json.RawMessage
	// ServerInfo is the Implementation object.
	ServerInfo json.RawMessage
	// Instructions is the optional hint for the model.
	Instructions string
	// Result is the whole InitializeResult, for fields not broken out above.
	Result json.RawMessage
}

// Conn is a connection whose handshake is done.
type Conn struct {
	Connection
	// Server is the upstream's answer to initialize.
	Server ServerHello
}

// named is implemented by this package's transports so that Dial's own
// errors and logs can name the upstream.
type named interface {
	upstreamSpec() Spec
}

// Dial connects and performs the MCP handshake: initialize, a check that the
// answered protocol version is one we support, then
// notifications/initialized. The ctx bounds the handshake only.
//
// Before answering initialize the server "SHOULD NOT send requests other than
// pings and logging". Dial answers a ping itself, answers any other request
// with an error, and drops notifications (logged at debug level): nobody is
// reading the connection yet, and nothing sent before the handshake refers to
// later traffic.
func Dial(ctx context.Context, t Transport, hello ClientHello) (*Conn, error) {
	name, log := "?", slog.Default()
	if n, ok := t.(named); ok {
		name, log = n.upstreamSpec().Name, n.upstreamSpec().logger()
	}
	params, err := initializeParams(hello)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: initialize params: %w", name, err)
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sh, err := handshake(ctx, conn, name, log, params)
	if err != nil {
		conn.Close()
		return nil, err
	}
	log.Info("upstream initialized", "protocolVersion", sh.ProtocolVersion)
	return &Conn{Connection: conn, Server: sh}, nil
}

func handshake(ctx context.Context, conn Connection, name string, log *slog.Logger, params []byte) (ServerHello, error) {
	req := jsonrpc.AppendRequest(nil, []byte(initRequestID), methodInitialize, params)
	if err := conn.Write(ctx, req); err != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: send initialize: %w", name, err)
	}
	var resp jsonrpc.Message
	for resp.Kind() == jsonrpc.KindInvalid {
		in, err := conn.Read(ctx)
		if err != nil {
			return ServerHello{}, fmt.Errorf("upstream %s: waiting for initialize response: %w", name, err)
		}
		m := in.Msg
		switch m.Kind() {
		case jsonrpc.KindResponse:
			if sameID(m.ID(), []byte(initRequestID)) {
				resp = m
			} else {
				log.Debug("dropping unexpected response during handshake")
			}
		case jsonrpc.KindRequest:
			var answer []byte
			if m.MethodIs("ping") {
				answer = jsonrpc.AppendResult(nil, m.ID(), []byte("{}"))
			} else {
				answer = jsonrpc.AppendError(nil, m.ID(), jsonrpc.CodeInvalidRequest, "client is not initialized yet", nil)
			}
			if err := conn.Write(ctx, answer); err != nil {
				return ServerHello{}, fmt.Errorf("upstream %s: answer %s during handshake: %w", name, m.Method(), err)
			}
		case jsonrpc.KindNotification:
			log.Debug("dropping notification sent before initialize was answered", "method", m.Method())
		}
	}
	if e := resp.Error(); e != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: initialize failed: %s", name, describeRPCError(e))
	}
	sh, err := parseServerHello(resp.Result())
	if err != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: bad initialize result: %w", name, err)
	}
	// "If the client does not support the version in the server's response,
	// it SHOULD disconnect."
	if !SupportedProtocolVersion(sh.ProtocolVersion) {
		return ServerHello{}, fmt.Errorf("upstream %s: server chose protocol version %q, which the gateway does not support (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)", name, sh.ProtocolVersion)
	}
	if err := conn.Write(ctx, jsonrpc.AppendNotification(nil, methodInitialized, nil)); err != nil {
		return ServerHello{}, fmt.Errorf("upstream %s: send %s: %w", name, methodInitialized, err)
	}
	return sh, nil
}

func initializeParams(h ClientHello) ([]byte, error) {
	p := struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}{h.ProtocolVersion, h.Capabilities, h.ClientInfo}
	if p.ProtocolVersion == "" {
		p.ProtocolVersion = LatestProtocolVersion
	}
	if len(p.Capabilities) == 0 {
		p.Capabilities = json.RawMessage("{}")
	}
	if len(p.ClientInfo) == 0 {
		p.ClientInfo = json.RawMessage(`{"name":"switchboard","version":"dev"}`)
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

package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Resumable is what a connection to a streamable HTTP upstream offers for resuming its session elsewhere (design
// §7: "per-client HTTP upstream sessions resume from their stored session ids"). Conn implements it when its
// transport is HTTP.
type Resumable interface {
	// SessionID is the upstream's Mcp-Session-Id ("" when it uses none).
	SessionID() string
}

// httpConn's SessionID is in streamable_session.go, with the session headers it reads.
var _ Resumable = (*httpConn)(nil)

// SessionID reports the upstream session id of an HTTP connection ("" for stdio, legacy SSE or no session).
func (c *Conn) SessionID() string {
	if r, ok := c.Connection.(Resumable); ok {
		return r.SessionID()
	}
	return ""
}

// ErrNotResumable is returned by Resume for transports whose sessions cannot be resumed (stdio: the child's state
// lives in its process).
var ErrNotResumable = errors.New("this upstream's sessions cannot be resumed")

// Resume attaches to an existing upstream session instead of starting one: the session id and negotiated
// version a previous connection (possibly another replica's) recorded, and the server's hello as it was. No
// initialize is sent; the initialize request is prepared all the same, so that if the upstream has forgotten the
// session (it answers 404) the connection starts a new one transparently, as for any expired session.
func Resume(ctx context.Context, t Transport, hello ClientHello, sessionID, protocolVersion string, server ServerHello) (*Conn, error) {
	ht, ok := t.(*HTTPTransport)
	if !ok || sessionID == "" {
		return nil, ErrNotResumable
	}
	params, err := initializeParams(hello)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: initialize params: %w", ht.spec.Name, err)
	}
	conn, err := ht.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := conn.(*httpConn)
	initReq := jsonrpc.AppendRequest(nil, []byte(initRequestID), methodInitialize, params)
	m, err := jsonrpc.Parse(initReq)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.mu.Lock()
	c.initReq, c.initID = initReq, m.ID()
	c.sessionID, c.protocol = sessionID, protocolVersion
	c.mu.Unlock()
	c.startGetStream()
	ht.spec.logger().Info("upstream session resumed", "protocolVersion", protocolVersion)
	return &Conn{Connection: conn, Server: server}, nil
}

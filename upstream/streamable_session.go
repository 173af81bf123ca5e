package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// The Streamable HTTP session: its id and negotiated version, the headers that carry them, re-initialization
// when the server forgets the session, and the DELETE that ends it.

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// deleteTimeout bounds the best-effort DELETE sent by Close.
const deleteTimeout = 5 * time.Second

// reinit replaces an expired session: "When a client receives HTTP 404 in
// response to a request containing an MCP-Session-Id, it MUST start a new
// session by sending a new InitializeRequest without a session ID attached."
// The stored initialize request and notifications/initialized are resent;
// the caller of the connection is not involved. stale is the session id the
// failed request carried; if another goroutine has already replaced it,
// reinit returns at once. A failed re-initialization ends the connection.
func (c *httpConn) reinit(stale string) error {
	c.reinitMu.Lock()
	defer c.reinitMu.Unlock()
	sid, _ := c.headers()
	if sid != stale {
		return nil
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	c.log.Info("upstream session expired (HTTP 404); re-initializing")
	if err := c.reinitialize(); err != nil {
		err = fmt.Errorf("upstream %s: re-initialize after session expiry: %w", c.name, err)
		c.log.Warn("re-initialization failed; ending the connection", "error", err)
		c.finish(err, false)
		return err
	}
	return nil
}

func (c *httpConn) reinitialize() error {
	c.mu.Lock()
	initReq := c.initReq
	c.mu.Unlock()
	if initReq == nil {
		return errors.New("no initialize request to resend")
	}
	init, err := jsonrpc.Parse(initReq)
	if err != nil {
		return err
	}
	id := init.ID()
	resp, err := c.do(c.ctx, http.MethodPost, c.t.url, initReq, nil, false)
	if err != nil {
		return err
	}
	var result jsonrpc.Message
	err = c.readResponse(id, resp, true, func(in Incoming) bool {
		if m := in.Msg; m.Kind() == jsonrpc.KindResponse && sameID(m.ID(), id) {
			result = m
		} else {
			c.log.Debug("dropping message sent during re-initialization", "kind", m.Kind().String(), "method", m.Method())
		}
		return true
	})
	if err != nil {
		return err
	}
	if e := result.Error(); e != nil {
		return fmt.Errorf("initialize failed: %s", describeRPCError(e))
	}
	old := c.protocolVersion()
	c.learnProtocol(result.Result())
	if v := c.protocolVersion(); v != old {
		c.log.Warn("upstream negotiated a different protocol version on re-initialization", "was", old, "now", v)
	}
	resp, err = c.do(c.ctx, http.MethodPost, c.t.url, jsonrpc.AppendNotification(nil, methodInitialized, nil), nil, true)
	if err != nil {
		return err
	}
	defer discard(resp)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %w", methodInitialized, httpStatusError(resp))
	}
	return nil
}

// do sends one request to url with the MCP headers. withSession adds the
// session id and negotiated protocol version ("the client MUST include the
// MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent
// requests"); an initialize request goes without either.
func (c *httpConn) do(ctx context.Context, method string, target *url.URL, body []byte, handed *handoff, withSession bool) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, target, body, handed, withSession)
	if err != nil {
		return nil, err
	}
	resp, err := c.t.do(req)
	handed.done() // the request is as handed over as it will ever be
	return resp, err
}

func (c *httpConn) newRequest(ctx context.Context, method string, target *url.URL, body []byte, handed *handoff, withSession bool) (*http.Request, error) {
	req, err := c.t.newRequest(ctx, method, target, body, handed)
	if err != nil {
		return nil, err
	}
	if withSession {
		sid, proto := c.headerValues()
		// The values are made once per session and never written: no copy per request. The keys are canonical.
		if sid != nil {
			req.Header["Mcp-Session-Id"] = sid
		}
		if proto != nil {
			req.Header["Mcp-Protocol-Version"] = proto
		}
	}
	return req, nil
}

// headerValues returns the session id and the protocol version as header values (nil for none), made once for
// each value and shared by every request that carries it.
func (c *httpConn) headerValues() (sessionID, protocol []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessionID == "" {
		c.sessionHeader = nil
	} else if len(c.sessionHeader) == 0 || c.sessionHeader[0] != c.sessionID {
		c.sessionHeader = []string{c.sessionID}
	}
	if c.protocol == "" {
		c.protocolHeader = nil
	} else if len(c.protocolHeader) == 0 || c.protocolHeader[0] != c.protocol {
		c.protocolHeader = []string{c.protocol}
	}
	return c.sessionHeader, c.protocolHeader
}

// headers returns the current session id and negotiated protocol version.
func (c *httpConn) headers() (sessionID, protocol string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID, c.protocol
}

// SessionID implements Resumable (resume.go): the session id of headers.
func (c *httpConn) SessionID() string {
	sid, _ := c.headers()
	return sid
}

func (c *httpConn) protocolVersion() string {
	_, p := c.headers()
	return p
}

func (c *httpConn) legacySession() *legacySession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacy
}

// learnSession takes the session id from an initialize response: "A server
// using the Streamable HTTP transport MAY assign a session ID at
// initialization time, by including it in an MCP-Session-Id header on the
// HTTP response containing the InitializeResult." The value is never logged.
func (c *httpConn) learnSession(h http.Header) error {
	sid := h.Get(headerSessionID)
	for i := 0; i < len(sid); i++ {
		// "The session ID MUST only contain visible ASCII characters
		// (ranging from 0x21 to 0x7E)."
		if sid[i] < 0x21 || sid[i] > 0x7e {
			return errors.New("server sent an invalid session id")
		}
	}
	c.mu.Lock()
	c.sessionID = sid
	c.mu.Unlock()
	return nil
}

// learnProtocol records the protocol version from an initialize result
// passing through, for the MCP-Protocol-Version header.
func (c *httpConn) learnProtocol(result []byte) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if result == nil || json.Unmarshal(result, &r) != nil || r.ProtocolVersion == "" {
		return
	}
	// Only values that are safe in a header.
	for i := 0; i < len(r.ProtocolVersion); i++ {
		if b := r.ProtocolVersion[i]; b < 0x21 || b > 0x7e {
			return
		}
	}
	c.mu.Lock()
	c.protocol = r.ProtocolVersion
	c.mu.Unlock()
}

func (c *httpConn) deleteSession() {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodDelete, c.t.url, nil, nil, true)
	if err != nil {
		return
	}
	resp, err := c.t.do(req)
	if err != nil {
		c.log.Debug("session DELETE failed", "error", err)
		return
	}
	discard(resp)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		c.log.Debug("session DELETE refused", "status", resp.StatusCode)
	}
}

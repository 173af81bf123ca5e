package gateway

import (
	"context"
	"errors"
	"sync"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// monoConn is a client connection with one outbound channel for everything: a 2024-11-05 HTTP+SSE client (its
// SSE stream) or a stdio client (stdout). Answers, notifications and server→client requests all go to the
// session's standalone Stream; before initialize they go to pre.
type monoConn struct {
	open     *opener
	pre      *routing.Stream
	owner    string // the identity that opened the connection; only it may post to it
	endpoint string // the endpoint it was opened on; its messages must be posted there

	// work are the goroutines gathering the answers of stdio batches; ServeStdio waits for them.
	work sync.WaitGroup

	mu           sync.Mutex
	sess         *routing.Session
	initializing bool // an initialize is being answered: a second one is refused, not raced
}

func newMonoConn(sessions Sessions, open *opener) *monoConn {
	return &monoConn{open: open, pre: sessions.NewStream(-1, 64)}
}

func (c *monoConn) session() *routing.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// errNotInitialized is what a message before initialize gets.
var errNotInitialized = errors.New("the session is not initialized: send initialize first")

// handle processes one message from the client; errors it cannot answer in-band are returned.
func (c *monoConn) handle(ctx context.Context, m jsonrpc.Message) error {
	sess := c.session()
	if m.Kind() == jsonrpc.KindRequest && m.MethodIs("initialize") {
		c.mu.Lock()
		busy := c.sess != nil || c.initializing
		c.initializing = !busy
		c.mu.Unlock()
		if busy {
			c.reply(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest, "the session is already initialized", nil))
			return nil
		}
		newSess, answer := c.open.start(ctx, m)
		c.pre.Push(answer, routing.ClassFinal)
		c.mu.Lock()
		c.sess, c.initializing = newSess, false
		c.mu.Unlock()
		if newSess != nil {
			c.pre.Close() // the writer drains what pre holds, then moves on to the session's stream
		}
		return nil
	}
	if sess == nil {
		if m.Kind() == jsonrpc.KindRequest {
			if m.MethodIs("ping") {
				c.pre.Push(jsonrpc.AppendResult(nil, m.ID(), []byte("{}")), routing.ClassFinal)
				return nil
			}
			c.pre.Push(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest, errNotInitialized.Error(), nil), routing.ClassFinal)
			return nil
		}
		return errNotInitialized
	}
	switch m.Kind() {
	case jsonrpc.KindNotification:
		sess.HandleNotification(m)
	case jsonrpc.KindResponse:
		sess.HandleResponse(m)
	default:
		sess.HandleRequest(ctx, m, sess.Standalone())
	}
	return nil
}

// reply sends a message of the gateway's own to the client (an error about its input).
func (c *monoConn) reply(msg []byte) {
	if sess := c.session(); sess != nil {
		sess.Standalone().Push(msg, routing.ClassFinal)
		return
	}
	c.pre.Push(msg, routing.ClassFinal)
}

// next returns the next outbound message: first whatever came before the session, then the session's stream.
// ok is false when ctx is done or the connection has nothing more to send (its session ended).
func (c *monoConn) next(ctx context.Context) ([]byte, bool) {
	if msg, _, ok := c.pre.Next(ctx); ok {
		return msg, true
	}
	// pre ends (closed and drained) once the session exists; until then only ctx stops the wait above.
	sess := c.session()
	if ctx.Err() != nil || sess == nil {
		return nil, false
	}
	msg, _, ok := sess.Standalone().Next(ctx)
	return msg, ok
}

// close ends the connection's session, if it has one.
func (c *monoConn) close() {
	c.pre.Close()
	if sess := c.session(); sess != nil {
		sess.Close()
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// ServeStdio serves one client over stdio, so that a desktop client can launch Switchboard as a local server:
// newline-delimited JSON-RPC on in and out ("Messages are delimited by newlines, and MUST NOT contain embedded
// newlines"). Both eras share the pipe, decided per message as on HTTP (isModernStdio): a legacy client
// initializes one session for the process; a 2026-07-28 client's requests each stand alone (stdiomodern.go).
// It returns when in ends (the client closed our stdin, which is how stdio shuts a server down), when writing
// fails, or when ctx ends (the gateway is shutting down: nil). A read of in cannot be stopped in general: when ctx
// ends first, ServeStdio interrupts it if in has SetReadDeadline (an *os.File the runtime polls, such as a pipe
// made non-blocking) and waits for the reader; otherwise it returns without it, and the reader ends with in.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.stdio.serve(ctx, in, out)
}

// stdioFront is the stdio front end: one client per ServeStdio, its legacy session on a monoConn, its 2026-07-28
// requests served by modern (stdioModern).
type stdioFront struct {
	sessions Sessions
	open     *opener
	modern   *modernFront
	obs      *observer
	maxBody  int64
	log      *slog.Logger
}

// serve is ServeStdio.
func (sf stdioFront) serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lw := newLineWriter(out)
	lw.ops = newStdioOps(sf.obs)
	defer lw.ops.closed()
	c := newMonoConn(sf.sessions, sf.open)
	defer c.close()
	mod := newStdioModern(sf.modern, lw)
	// The batch gatherers and the 2026-07-28 requests end with ctx; the legacy session closes after them.
	defer func() { cancel(errStdinClosed); c.work.Wait(); mod.work.Wait() }()
	werr := make(chan error, 1)
	go func() { werr <- writeStdio(ctx, c, lw) }()

	limit := int(sf.maxBody)
	reads := make(chan stdioRead)
	stop, readerDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(readerDone); readStdio(in, limit, reads, stop) }()
	defer func() {
		close(stop)
		if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
			<-readerDone
		}
	}()
	for {
		select {
		case rd := <-reads:
			switch {
			case rd.tooLong:
				c.reply(jsonrpc.AppendError(nil, nil, protocol.CodeInvalidRequest, fmt.Sprintf("message exceeds the limit of %d bytes", limit), nil))
			case rd.err != nil:
				cancel(errStdinClosed)
				<-werr
				if errors.Is(rd.err, io.EOF) {
					return nil
				}
				return fmt.Errorf("reading stdin: %w", rd.err)
			default:
				sf.message(ctx, c, mod, lw.ops, rd.line)
			}
		case <-lw.dead:
			cancel(errStdinClosed)
			<-werr
			return lw.failure()
		case <-ctx.Done():
			<-werr
			return nil
		}
	}
}

// stdioRead is what the reader of stdin found: a line (its own bytes, spaces trimmed), a line over the limit, or
// the end of the input.
type stdioRead struct {
	line    []byte
	tooLong bool
	err     error
}

// readStdio reads in line by line onto reads until in ends or stop is closed. A line over limit is reported once
// and skipped to its end.
func readStdio(in io.Reader, limit int, reads chan<- stdioRead, stop <-chan struct{}) {
	send := func(rd stdioRead) bool {
		select {
		case reads <- rd:
			return true
		case <-stop:
			return false
		}
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line)+len(chunk) > limit {
			// Too long: answer once, then skip the rest of the line.
			if len(line) <= limit && !send(stdioRead{tooLong: true}) {
				return
			}
			line = line[:0]
			if isPrefix {
				line = append(line, make([]byte, limit+1)...) // stay over the limit until the line ends
				continue
			}
		} else {
			line = append(line, chunk...)
			if isPrefix {
				continue
			}
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				if !send(stdioRead{line: trimmed}) {
					return
				}
				line = nil // the line is the handler's now
			} else {
				line = line[:0]
			}
		}
		if err != nil {
			send(stdioRead{err: err})
			return
		}
	}
}

// isModernStdio reports whether a request read from stdio belongs to the stateless era, deciding as the HTTP
// front end does (isModern), with the request's own _meta in the place of the MCP-Protocol-Version header and the
// process's legacy session in the place of a session id. "A request carrying modern per-request _meta is served
// statelessly according to this revision. An initialize request selects legacy semantics, scoped to the stdio
// process", and "A dual-era server MAY serve both eras concurrently on the same endpoint or process": a request
// that declares 2026-07-28 is modern even beside a legacy session; before one, so is any request that declares a
// version (an unsupported one gets -32022, which a dual-era client recognises as modern), and server/discover
// and subscriptions/listen, which exist in no legacy version (without _meta they get -32602, a modern error too).
func isModernStdio(m jsonrpc.Message, legacySession bool) bool {
	if m.Kind() != jsonrpc.KindRequest {
		return false
	}
	params := m.Params()
	st, e, declared := jsonrpc.Lookup(params, "_meta", protocol.MetaProtocolVersion)
	if declared {
		if v, err := jsonrpc.Unquote(params[st:e]); err == nil && v == protocol.Modern {
			return true
		}
	}
	if legacySession {
		return false
	}
	return declared || m.MethodIs(protocol.MethodServerDiscover) || m.MethodIs(protocol.MethodSubscriptionsListen)
}

// message handles one line from the client; it owns the line's bytes.
func (sf stdioFront) message(ctx context.Context, c *monoConn, mod *stdioModern, ops *stdioOps, line []byte) {
	if len(line) == 0 {
		return
	}
	if jsonrpc.IsBatch(line) {
		sf.batch(ctx, c, line) // batches exist only in 2025-03-26
		return
	}
	m, err := jsonrpc.Parse(line)
	if err != nil {
		c.reply(parseErrorMessage(err))
		return
	}
	if m.Kind() == jsonrpc.KindNotification && m.MethodIs(protocol.NotificationCancelled) {
		ops.cancelled(m.Params())
	}
	switch {
	case isModernStdio(m, c.session() != nil):
		version, _ := jsonrpc.LookupString(m.Params(), "_meta", protocol.MetaProtocolVersion)
		mod.request(ops.start(ctx, m, version), m)
		return
	case m.Kind() == jsonrpc.KindNotification && m.MethodIs(protocol.NotificationCancelled) && mod.cancel(m.Params()):
		return // it named a 2026-07-28 request; any other goes to the legacy session, whose ids it may name
	}
	if m.Kind() == jsonrpc.KindRequest {
		var version string
		if sess := c.session(); sess != nil {
			version = sess.ProtocolVersion()
		} else if m.MethodIs("initialize") {
			version, _ = jsonrpc.LookupString(m.Params(), "protocolVersion")
		}
		ctx = ops.start(ctx, m, version)
	}
	if err := c.handle(ctx, m); err != nil {
		sf.log.Debug("stdio message dropped", "err", err)
	}
}

// parseErrorMessage is the answer to a message that does not parse: -32700 for bytes that are not JSON, -32600
// for JSON that is not a valid request.
func parseErrorMessage(err error) []byte {
	code := protocol.CodeInvalidRequest
	if errors.Is(err, jsonrpc.ErrParse) {
		code = protocol.CodeParseError
	}
	return jsonrpc.AppendError(nil, nil, code, err.Error(), nil)
}

// batch handles a JSON-RPC batch, which only 2025-03-26 allows; its answers go out as one array, as
// JSON-RPC 2.0 asks, while what precedes them (progress, server requests) goes out as it comes.
func (sf stdioFront) batch(ctx context.Context, c *monoConn, line []byte) {
	parts, err := jsonrpc.SplitBatch(line)
	if err != nil {
		c.reply(parseErrorMessage(err))
		return
	}
	sess := c.session()
	if sess == nil || sess.ProtocolVersion() != protocol.V20250326 {
		c.reply(jsonrpc.AppendError(nil, nil, protocol.CodeInvalidRequest, "JSON-RPC batches are only allowed in protocol version 2025-03-26, after initialize", nil))
		return
	}
	if len(parts) > maxBatch {
		// The same bound as over HTTP: one line must not fan out to the upstreams without limit.
		c.reply(jsonrpc.AppendError(nil, nil, protocol.CodeInvalidRequest, fmt.Sprintf("a batch may hold at most %d messages; this one has %d: split it", maxBatch, len(parts)), nil))
		return
	}
	var requests []jsonrpc.Message
	var answers [][]byte
	for _, p := range parts {
		m, err := jsonrpc.Parse(p)
		switch {
		case err != nil:
			answers = append(answers, parseErrorMessage(err))
		case m.MethodIs("initialize"):
			answers = append(answers, jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest, "initialize must not be part of a batch", nil))
		case m.Kind() == jsonrpc.KindRequest:
			requests = append(requests, m)
		default:
			_ = c.handle(ctx, m)
		}
	}
	out := sf.sessions.NewStream(len(requests), 0)
	for _, m := range requests {
		sess.HandleRequest(ctx, m, out)
	}
	// Gather the answers without holding up the reader: the requests may take a while.
	c.work.Go(func() { // ends when the batch is answered or the connection ends
		for {
			msg, final, ok := out.Next(ctx)
			if !ok {
				break
			}
			if final {
				answers = append(answers, msg)
			} else {
				sess.Standalone().Push(msg, routing.ClassNotice)
			}
		}
		if len(answers) == 0 || ctx.Err() != nil {
			return
		}
		b := append([]byte{'['}, bytes.Join(answers, []byte{','})...)
		sess.Standalone().Push(append(b, ']'), routing.ClassFinal)
	})
}

// writeStdio writes the legacy session's outbound messages (and the gateway's answers to lines it could not
// read) until ctx ends or writing fails.
func writeStdio(ctx context.Context, c *monoConn, lw *lineWriter) error {
	for {
		msg, ok := c.next(ctx)
		if !ok {
			return nil
		}
		if err := lw.line(msg); err != nil {
			return err
		}
	}
}

// lineWriter writes whole lines to stdout for every producer: the legacy session's writer and each 2026-07-28
// request, whose messages are "multiplexed onto a single shared channel". A client that does not read holds the
// producers up, each of which queues (and drops notifications) in its own routing.Stream meanwhile.
type lineWriter struct {
	mu   sync.Mutex
	bw   *bufio.Writer
	buf  []byte
	err  error
	dead chan struct{} // closed when writing fails
	// ops are the client's operations in flight (stdioobserve.go), which the lines answering them end; nil when
	// not observed.
	ops *stdioOps
}

func newLineWriter(out io.Writer) *lineWriter {
	return &lineWriter{bw: bufio.NewWriter(out), dead: make(chan struct{})}
}

// line writes msg as one line, compacted if it holds a newline. After a failure every call returns the failure.
func (lw *lineWriter) line(msg []byte) error {
	// Its operation ends as its answer goes out (a client that reads it may look at once); outside the lock, so
	// that ending a span and recording a metric never hold up the other writers.
	lw.ops.answered(msg)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		return lw.err
	}
	if bytes.ContainsAny(msg, "\r\n") {
		lw.buf = jsonrpc.Compact(lw.buf[:0], msg)
		msg = lw.buf
	}
	_, err := lw.bw.Write(msg)
	if err == nil {
		err = lw.bw.WriteByte('\n')
	}
	if err == nil {
		err = lw.bw.Flush()
	}
	if err != nil {
		lw.err = fmt.Errorf("writing stdout: %w", err)
		close(lw.dead)
		return lw.err
	}
	return nil
}

// failure is the error that ended writing.
func (lw *lineWriter) failure() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.err
}

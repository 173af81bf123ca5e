package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard-mcp/switchboard/routing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// ServeStdio serves one client over stdio, so that a desktop client can launch Switchboard as a local server:
// newline-delimited JSON-RPC on in and out ("Messages are delimited by newlines, and MUST NOT contain embedded
// newlines"). It returns when in ends (the client closed our stdin, which is how stdio shuts a server down),
// when writing fails, or when ctx ends.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := newMonoConn(s)
	defer c.close()
	defer func() { cancel(); c.work.Wait() }() // the batch gatherers end with ctx
	werr := make(chan error, 1)
	go func() { werr <- writeStdio(ctx, c, out) }()

	br := bufio.NewReaderSize(in, 64<<10)
	limit := int(s.opts.MaxBodyBytes)
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line)+len(chunk) > limit {
			// Too long: answer once, then skip the rest of the line.
			if len(line) <= limit {
				c.reply(jsonrpc.AppendError(nil, nil, protocol.CodeInvalidRequest, fmt.Sprintf("message exceeds the limit of %d bytes", limit), nil))
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
			s.stdioMessage(ctx, c, bytes.TrimSpace(line))
			line = line[:0]
		}
		if err != nil {
			cancel()
			<-werr
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading stdin: %w", err)
		}
		select {
		case err := <-werr:
			return err
		default:
		}
	}
}

// stdioMessage handles one line from the client.
func (s *Server) stdioMessage(ctx context.Context, c *monoConn, line []byte) {
	if len(line) == 0 {
		return
	}
	if jsonrpc.IsBatch(line) {
		s.stdioBatch(ctx, c, line)
		return
	}
	m, err := jsonrpc.Parse(bytes.Clone(line))
	if err != nil {
		c.reply(parseErrorMessage(err))
		return
	}
	if err := c.handle(ctx, m); err != nil {
		s.log.Debug("stdio message dropped", "err", err)
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

// stdioBatch handles a JSON-RPC batch, which only 2025-03-26 allows; its answers go out as one array, as
// JSON-RPC 2.0 asks, while what precedes them (progress, server requests) goes out as it comes.
func (s *Server) stdioBatch(ctx context.Context, c *monoConn, line []byte) {
	parts, err := jsonrpc.SplitBatch(bytes.Clone(line))
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
	out := s.r.NewStream(len(requests), 0)
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

// writeStdio writes every outbound message as one line.
func writeStdio(ctx context.Context, c *monoConn, out io.Writer) error {
	bw := bufio.NewWriter(out)
	var buf []byte
	for {
		msg, ok := c.next(ctx)
		if !ok {
			return nil
		}
		if bytes.ContainsAny(msg, "\r\n") {
			buf = jsonrpc.Compact(buf[:0], msg)
			msg = buf
		}
		if _, err := bw.Write(msg); err != nil {
			return fmt.Errorf("writing stdout: %w", err)
		}
		if err := bw.WriteByte('\n'); err != nil {
			return fmt.Errorf("writing stdout: %w", err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing stdout: %w", err)
		}
	}
}

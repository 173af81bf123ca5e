package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
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
				c.reply(jsonrpc.AppendError(nil, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message exceeds the limit of %d bytes", limit), nil))
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
	parts := [][]byte{line}
	if jsonrpc.IsBatch(line) {
		var err error
		if parts, err = jsonrpc.SplitBatch(line); err != nil {
			c.reply(jsonrpc.AppendError(nil, nil, jsonrpc.CodeParseError, "parse error: "+err.Error(), nil))
			return
		}
	}
	for _, p := range parts {
		m, err := jsonrpc.Parse(bytes.Clone(p))
		if err != nil {
			code := jsonrpc.CodeInvalidRequest
			if errors.Is(err, jsonrpc.ErrParse) {
				code = jsonrpc.CodeParseError
			}
			c.reply(jsonrpc.AppendError(nil, nil, code, err.Error(), nil))
			continue
		}
		if err := c.handle(ctx, m); err != nil {
			s.log.Debug("stdio message dropped", "err", err)
		}
	}
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

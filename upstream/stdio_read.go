package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Reading from a stdio child: stdout lines into messages, stderr lines into logs.

const (
	// maxStderrLine bounds one logged stderr line; the rest of a longer line
	// is discarded.
	maxStderrLine = 4 << 10
	// maxLoggedLine bounds how much of a rejected stdout line is logged.
	maxLoggedLine = 256
	// stdoutBufSize is the read buffer for stdout; lines may be longer (up to
	// MaxMessageBytes), they are then assembled from several reads.
	stdoutBufSize = 64 << 10
)

// exitAwareReader reads a pipe from the child. Once the child has exited, a
// read that sees no data for the grace period ends the stream: only a
// descendant that escaped the process group could still be holding the
// pipe open, and the connection must still end.
type exitAwareReader struct {
	f *os.File
	c *stdioConn
}

func (r exitAwareReader) Read(p []byte) (int, error) {
	if r.c.hasExited.Load() {
		_ = r.f.SetReadDeadline(time.Now().Add(r.c.grace))
	}
	n, err := r.f.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		r.c.log.Warn("stdio upstream exited but a pipe is still open; giving up on it", "pid", r.c.pid)
		err = io.EOF
	}
	return n, err
}

// readStdout turns stdout lines into messages. Per the specification "the
// server MUST NOT write anything to its stdout that is not a valid MCP
// message", but one bad line should not end the session: lines that are too
// long or not JSON-RPC are logged and skipped.
func (c *stdioConn) readStdout(f *os.File) {
	defer c.wg.Done()
	defer f.Close()
	defer close(c.queue)
	br := bufio.NewReaderSize(exitAwareReader{f, c}, stdoutBufSize)
	var buf []byte
	for {
		line, tooLong, err := readLine(br, c.maxMsg, buf[:0])
		if tooLong {
			c.log.Warn("discarding stdout line longer than the message limit", "limit", c.maxMsg)
			// The call it answers would otherwise wait for its timeout: fail it now, when the line's start names
			// its id (an answer's "id" usually precedes its large "result").
			if id := leadingID(line); id != nil {
				msg := fmt.Sprintf("upstream %q sent an answer of more than %d bytes, over its message limit (maxMessageBytes); the answer was discarded", c.name, c.maxMsg)
				if !c.handleLine(jsonrpc.AppendError(nil, id, protocol.CodeInternalError, msg, nil)) {
					return
				}
			}
		} else if len(line) > 0 {
			buf = line
			if !c.handleLine(line) {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("reading stdout failed", "error", err)
			}
			return
		}
		if cap(buf) > stdoutBufSize {
			buf = nil // do not keep one huge line's buffer alive
		}
	}
}

// handleLine parses one line and queues its message(s). It reports false if
// the connection is closing.
func (c *stdioConn) handleLine(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return true
	}
	raw := bytes.Clone(line) // the line buffer is reused; a Message aliases its input
	elems := [][]byte{raw}
	if jsonrpc.IsBatch(raw) {
		// Batches are allowed by 2025-03-26 only; split them, since the
		// gateway handles one message at a time.
		var err error
		if elems, err = jsonrpc.SplitBatch(raw); err != nil {
			c.log.Warn("skipping stdout line that is not a JSON-RPC message", "error", err, "line", truncate(raw, maxLoggedLine))
			return true
		}
	}
	for _, e := range elems {
		msg, err := jsonrpc.Parse(e)
		if err != nil {
			c.log.Warn("skipping stdout line that is not a JSON-RPC message", "error", err, "line", truncate(e, maxLoggedLine))
			continue
		}
		if id := c.ignoreID.Load(); id != nil && msg.Kind() == jsonrpc.KindResponse && sameID(msg.ID(), *id) {
			c.log.Debug("dropping a late answer to server/discover")
			continue
		}
		if c.preempted(msg) {
			continue
		}
		c.unrouted.Add(1)
		select {
		case c.queue <- Incoming{Msg: msg}:
		case <-c.stop:
			return false
		}
	}
	return true
}

// readStderr logs the child's stderr line by line. Since 2025-11-25 "the
// client MAY capture, forward, or ignore this logging" and "SHOULD NOT
// assume stderr output indicates error conditions", hence level Info.
func (c *stdioConn) readStderr(f *os.File) {
	defer c.wg.Done()
	defer f.Close()
	br := bufio.NewReaderSize(exitAwareReader{f, c}, maxStderrLine)
	var buf []byte
	for {
		line, tooLong, err := readLine(br, maxStderrLine, buf[:0])
		if tooLong || len(line) > 0 {
			buf = line
			if s := strings.TrimRight(string(line), " \t"); s != "" || tooLong {
				c.log.Info("stderr", "line", s, "truncated", tooLong)
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line into buf (without its line ending). A line longer
// than limit is consumed up to its newline and reported with tooLong and its
// first limit bytes. err is non-nil when the stream ended; line may then hold
// a final unterminated line.
func readLine(br *bufio.Reader, limit int, buf []byte) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if room := limit + 2 - len(buf); len(chunk) > room { // +2 for "\r\n"
				buf = append(buf, chunk[:max(0, room)]...)
				tooLong = true
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = bytes.TrimRight(buf, "\r\n")
		if len(buf) > limit {
			buf, tooLong = buf[:limit], true
		}
		return buf, tooLong, err
	}
}

// leadingID finds the id of a JSON-RPC message from the start of its line, which is cut short: the value of a
// top-level "id" member, a number or a string, when it lies wholly within prefix. It returns nil when there is
// none, or when the line has a top-level "method" before it (a request of the upstream's own, not an answer).
func leadingID(prefix []byte) []byte {
	depth, i := 0, 0
	for i < len(prefix) {
		switch c := prefix[i]; c {
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		case '"':
			end := stringEnd(prefix, i)
			if end < 0 {
				return nil
			}
			key := prefix[i:end]
			i = end
			if depth != 1 {
				continue
			}
			j := skipSpace(prefix, i)
			if j >= len(prefix) || prefix[j] != ':' {
				continue // a value, not a key
			}
			switch string(key) {
			case `"method"`:
				return nil
			case `"id"`:
				v := skipSpace(prefix, j+1)
				if v < len(prefix) && prefix[v] == '"' {
					if e := stringEnd(prefix, v); e > 0 {
						return prefix[v:e]
					}
					return nil
				}
				e := v
				for e < len(prefix) && (prefix[e] == '-' || prefix[e] >= '0' && prefix[e] <= '9') {
					e++
				}
				if e > v && e < len(prefix) { // the number must end inside the prefix
					return prefix[v:e]
				}
				return nil
			}
		default:
			i++
		}
	}
	return nil
}

// stringEnd returns the index just past the JSON string starting at b[i], or -1 if it does not end within b.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// truncate returns at most n bytes of b as a string for logging.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

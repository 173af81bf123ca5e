package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

const (
	// maxStderrLine bounds one logged stderr line; the rest of a longer line
	// is discarded.
	maxStderrLine = 4 << 10
	// maxLoggedLine bounds how much of a rejected stdout line is logged.
	maxLoggedLine = 256
	// stdoutBufSize is the read buffer for stdout; lines may be longer (up to
	// MaxMessageBytes), they are then assembled from several reads.
	stdoutBufSize = 64 << 10
	// maxKeptWriteBuf bounds the framing buffer kept between writes.
	maxKeptWriteBuf = 64 << 10
)

// CommandTransport runs an upstream MCP server as a child process that
// speaks newline-delimited JSON-RPC on stdin and stdout. Each Connect starts
// a new child in its own process group, so that shutting it down also reaps
// any processes it started.
type CommandTransport struct {
	spec Spec
	eras eraCache
}

// Connect starts the child process. The context bounds the start only; the
// child lives until Close, or until it exits by itself.
func (t *CommandTransport) Connect(ctx context.Context) (Connection, error) {
	spec := t.spec
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("upstream %s: %w", spec.Name, err)
	}
	// Pipes of our own rather than cmd.StdoutPipe: exec.Cmd.Wait closes the
	// pipes it created, which would lose output still buffered when the
	// child exits, and it must not be called before all reads are done. With
	// our own pipes the waiter reaps the child as soon as it exits (no
	// zombie) while the readers drain at their own pace.
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: stdin pipe: %w", spec.Name, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("upstream %s: stdout pipe: %w", spec.Name, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("upstream %s: stderr pipe: %w", spec.Name, err)
	}

	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env = childEnv(os.Environ(), spec.EnvPassthrough, spec.Env)
	cmd.Dir = spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("upstream %s: start %s: %w", spec.Name, spec.Command, err)
	}
	// The child holds its own copies now; ours of the child's ends would keep
	// stdout open (no EOF) after the child exits.
	inR.Close()
	outW.Close()
	errW.Close()

	c := &stdioConn{
		name:     spec.Name,
		log:      spec.logger(),
		grace:    spec.shutdownGrace(),
		maxMsg:   spec.maxMessageBytes(),
		cmd:      cmd,
		pid:      cmd.Process.Pid,
		stdin:    inW,
		writeSem: make(chan struct{}, 1),
		queue:    make(chan Incoming, queueLen),
		stop:     make(chan struct{}),
		exited:   make(chan struct{}),
	}
	c.log.Info("started stdio upstream", "pid", c.pid, "command", spec.Command)
	c.wg.Add(3)
	go c.readStdout(outR)
	go c.readStderr(errR)
	go c.wait(outR, errR)
	return c, nil
}

// inherited reports whether a child inherits the gateway's variable k: what a program needs to find its tools,
// its home, its language and its temporary files, and where TLS trust anchors live (paths, never secrets), plus
// what the upstream names in passthrough. Everything else in the gateway's environment (the cursor secret, client
// secrets, a Redis password) stays out of children: an MCP server's tools can read their environment and hand it
// to a client.
func inherited(k string, passthrough []string) bool {
	switch k {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "TERM", "LANG", "LANGUAGE",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS":
		return true
	}
	return strings.HasPrefix(k, "LC_") || envNamed(passthrough, k)
}

// childEnv builds a child's environment: the variables of base it inherits (a trailing '*' in passthrough matches
// a prefix), then overrides. Keys are applied in sorted order for reproducibility; exec.Cmd keeps the last
// value of a duplicated key, so overrides win.
func childEnv(base []string, passthrough []string, overrides map[string]string) []string {
	env := make([]string, 0, 16+len(overrides))
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if ok && inherited(k, passthrough) {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+overrides[k])
	}
	return env
}

// envNamed reports whether patterns name the variable k: exactly, or by a prefix ending in '*'.
func envNamed(patterns []string, k string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(k, prefix) || p == k {
			return true
		}
	}
	return false
}

// stdioConn is a Connection to a child process.
//
// Goroutines: readStdout (ends at stdout EOF, or when Close is called while it
// waits on the queue), readStderr (ends at stderr EOF) and wait (ends when the
// child exits). When the child exits, wait kills what is left of its process
// group, so both pipes reach EOF; a descendant that escaped the group and
// keeps a pipe open is tolerated for ShutdownGrace of silence (see
// exitAwareReader). Close waits for all three.
type stdioConn struct {
	name   string
	log    *slog.Logger
	grace  time.Duration
	maxMsg int
	cmd    *exec.Cmd
	pid    int // also the process group id (Setpgid)
	stdin  *os.File

	// writeSem serializes writes (one message per line must never
	// interleave) and, unlike a mutex, can be waited on with a context.
	writeSem chan struct{}
	// Guarded by writeSem.
	wbuf     []byte
	writeErr error // sticky once a message was partly written

	queue     chan Incoming // closed by readStdout when stdout ends
	stop      chan struct{} // closed by Close
	closeOnce sync.Once

	exited    chan struct{} // closed by wait once the child is reaped
	exitErr   error         // cmd.Wait's result, set before exited is closed
	hasExited atomic.Bool

	// meta is set once the child speaks the modern era: every request
	// written gets the _meta it requires (see requestMeta.inject).
	meta atomic.Pointer[requestMeta]
	// ignoreID is the id of a server/discover that went unanswered before
	// Dial fell back to initialize; its late answer is dropped.
	ignoreID atomic.Pointer[[]byte]

	wg sync.WaitGroup
}

// Read returns the next message from the child's stdout. After stdout ends
// and the child is reaped it returns an error describing how the child
// ended; a zero exit status or a Close wraps io.EOF.
func (c *stdioConn) Read(ctx context.Context) (Incoming, error) {
	select {
	case <-c.stop:
		return Incoming{}, fmt.Errorf("upstream %s: %w", c.name, errClosed)
	default:
	}
	select {
	case in, ok := <-c.queue:
		if ok {
			return in, nil
		}
	case <-c.stop:
		return Incoming{}, fmt.Errorf("upstream %s: %w", c.name, errClosed)
	case <-ctx.Done():
		return Incoming{}, ctx.Err()
	}
	// stdout has ended; the child is exiting or has exited.
	select {
	case <-c.exited:
	case <-c.stop:
		return Incoming{}, fmt.Errorf("upstream %s: %w", c.name, errClosed)
	case <-ctx.Done():
		return Incoming{}, ctx.Err()
	}
	return Incoming{}, c.endErr()
}

// endErr describes how the child ended. Only valid after exited is closed.
func (c *stdioConn) endErr() error {
	if c.exitErr == nil {
		return fmt.Errorf("upstream %s: child exited with status 0: %w", c.name, io.EOF)
	}
	return fmt.Errorf("upstream %s: child exited: %w", c.name, c.exitErr)
}

// Write sends msg as one line on the child's stdin. A message containing raw
// newlines (pretty-printed JSON) is compacted first, because stdio framing
// is one message per line and messages "MUST NOT contain embedded newlines".
// If ctx ends while the child is not reading stdin, the write is abandoned;
// if part of the message was already written the framing is broken and all
// later writes fail.
func (c *stdioConn) Write(ctx context.Context, msg []byte) error {
	select {
	case c.writeSem <- struct{}{}:
	case <-c.stop:
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	case <-ctx.Done():
		return fmt.Errorf("upstream %s: write: %w", c.name, ctx.Err())
	}
	defer func() { <-c.writeSem }()
	if c.writeErr != nil {
		return c.writeErr
	}
	if rm := c.meta.Load(); rm != nil {
		// Modern stdio: the same pipe and framing, but every request
		// carries its _meta. Notifications (notifications/cancelled
		// included: "used only on the stdio transport") and responses go
		// as they are.
		if m, err := jsonrpc.Parse(bytes.TrimSpace(msg)); err == nil && m.Kind() == jsonrpc.KindRequest {
			if msg, err = rm.inject(nil, m); err != nil {
				return fmt.Errorf("upstream %s: write %s: %w", c.name, m.Method(), err)
			}
		}
	}
	select {
	case <-c.stop:
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	default:
	}

	buf := c.wbuf[:0]
	msg = bytes.TrimSpace(msg)
	if bytes.ContainsAny(msg, "\r\n") {
		buf = jsonrpc.Compact(buf, msg)
		if bytes.ContainsAny(buf, "\r\n") {
			// Only invalid JSON keeps a raw newline after compaction.
			return fmt.Errorf("upstream %s: write: message is not valid JSON", c.name)
		}
	} else {
		buf = append(buf, msg...)
	}
	if len(buf) == 0 {
		return fmt.Errorf("upstream %s: write: empty message", c.name)
	}
	buf = append(buf, '\n')
	if cap(buf) <= maxKeptWriteBuf {
		c.wbuf = buf
	}

	// A deadline in the past makes the blocked write return; that is how a
	// context abandons a write to a child that stopped reading stdin.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = c.stdin.SetWriteDeadline(time.Unix(1, 0))
	})
	n, err := c.stdin.Write(buf)
	if !stop() {
		<-fired
		_ = c.stdin.SetWriteDeadline(time.Time{})
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		err = ctx.Err()
	}
	err = fmt.Errorf("upstream %s: write: %w", c.name, err)
	if n > 0 {
		c.writeErr = err
	}
	return err
}

// Close shuts the child down as the specification advises for stdio: "the
// client SHOULD initiate shutdown by: 1. First, closing the input stream to
// the child process (the server) 2. Waiting for the server to exit, or
// sending SIGTERM if the server does not exit within a reasonable time
// 3. Sending SIGKILL if the server does not exit within a reasonable time
// after SIGTERM". Signals go to the whole process group. Close returns once
// the child is reaped and every goroutine of the connection has ended.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.stop)
		c.stdin.Close() // wakes a blocked Write too
		if !c.waitExited(c.grace) {
			c.log.Info("stdio upstream did not exit after stdin was closed; sending SIGTERM", "pid", c.pid)
			c.signalGroup(syscall.SIGTERM)
			if !c.waitExited(c.grace) {
				c.log.Warn("stdio upstream did not exit after SIGTERM; sending SIGKILL", "pid", c.pid)
				c.signalGroup(syscall.SIGKILL)
				<-c.exited
			}
		}
		c.wg.Wait()
	})
	return nil
}

func (c *stdioConn) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

func (c *stdioConn) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		c.log.Warn("signalling stdio upstream failed", "pid", c.pid, "signal", sig.String(), "error", err)
	}
}

// wait reaps the child as soon as it exits, then kills whatever is left of
// its process group: the child's own children would otherwise be orphans
// that may hold stdout open forever.
func (c *stdioConn) wait(stdout, stderr *os.File) {
	defer c.wg.Done()
	err := c.cmd.Wait()
	c.exitErr = err
	c.hasExited.Store(true)
	close(c.exited)
	if err != nil {
		c.log.Warn("stdio upstream exited", "pid", c.pid, "status", c.cmd.ProcessState.String())
	} else {
		c.log.Info("stdio upstream exited", "pid", c.pid, "status", c.cmd.ProcessState.String())
	}
	c.signalGroup(syscall.SIGKILL)
	// Wake readers blocked on pipes that a descendant outside the group
	// still holds; exitAwareReader re-arms the deadline on each read.
	deadline := time.Now().Add(c.grace)
	_ = stdout.SetReadDeadline(deadline)
	_ = stderr.SetReadDeadline(deadline)
}

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
				if !c.handleLine(jsonrpc.AppendError(nil, id, jsonrpc.CodeInternalError, msg, nil)) {
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

func (t *CommandTransport) upstreamSpec() Spec { return t.spec }

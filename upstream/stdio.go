package upstream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
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
		name:   spec.Name,
		log:    spec.logger(),
		grace:  spec.shutdownGrace(),
		maxMsg: spec.maxMessageBytes(),
		cmd:    cmd,
		pid:    cmd.Process.Pid,
		stdin:  inW,
		queue:  make(chan Incoming, queueLen),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	c.log.Info("started stdio upstream", "pid", c.pid, "command", spec.Command)
	c.wg.Add(3)
	go c.readStdout(outR)
	go c.readStderr(errR)
	go c.wait(outR, errR)
	return c, nil
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

	// w puts messages on stdin, one per line, never interleaved (stdio_write.go).
	w stdinWriter

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

	// preempter, once set (Preempt), takes responses on the stdout reader.
	preempter atomic.Pointer[Preempter]
	// unrouted counts the messages queued and not yet done with: from the
	// reader's queueing to the consumer's next Read. Only the reader adds
	// to it, so when it reads 0, everything read before has been routed and
	// a response may be taken out of turn without overtaking anything.
	unrouted atomic.Int64
	// held, Read's own, tells that Read returned a message counted in
	// unrouted (Read is called from one goroutine).
	held bool

	wg sync.WaitGroup
}

// Read returns the next message from the child's stdout. After stdout ends
// and the child is reaped it returns an error describing how the child
// ended; a zero exit status or a Close wraps io.EOF.
func (c *stdioConn) Read(ctx context.Context) (Incoming, error) {
	c.release()
	select {
	case <-c.stop:
		return Incoming{}, fmt.Errorf("upstream %s: %w", c.name, errClosed)
	default:
	}
	select {
	case in, ok := <-c.queue:
		if ok {
			c.held = true
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

func (t *CommandTransport) upstreamSpec() Spec { return t.spec }

// Preempt makes p take the child's responses on the stdout reader, when nothing read before a response is still
// waiting to be routed. It saves a response the hop through the queue and Read's goroutine. Called, like Read,
// from the consumer's goroutine, it tells that the consumer is done with what Read returned before (the
// handshake's answer).
func (c *stdioConn) Preempt(p Preempter) {
	c.release()
	c.preempter.Store(&p)
}

// Conn.Preempt finds this by a type assertion; a renamed method would make it a silent no-op.
var _ preemptible = (*stdioConn)(nil)

// release tells that the consumer is done with the message Read returned last, if it has not said so yet.
func (c *stdioConn) release() {
	if c.held {
		c.held = false
		c.unrouted.Add(-1)
	}
}

// preempted offers msg to the preempter, reporting whether it took it. Only a response is offered, and only
// when nothing read before it is still waiting: a progress notification or a log message the child sent before
// its answer must reach the client first.
func (c *stdioConn) preempted(msg jsonrpc.Message) bool {
	p := c.preempter.Load()
	if p == nil || msg.Kind() != jsonrpc.KindResponse || c.unrouted.Load() != 0 {
		return false
	}
	return (*p).Preempt(Incoming{Msg: msg})
}

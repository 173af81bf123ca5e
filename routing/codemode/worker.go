package codemode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Frame bounds: what a worker may send (calls are bounded by MaxArgBytes, the outcome by MaxOutput), and what
// the parent may (tool results, which the upstreams bound).
const (
	maxFromWorker = 16 << 20
	maxToWorker   = 64 << 20
)

// worker is the parent's end of a sandbox worker process. One run uses it at a time.
type worker struct {
	cmd        *exec.Cmd
	in         io.WriteCloser
	out        *frameReader
	stderr     tail
	stderrDone chan struct{}
	memory     int64

	mu      sync.Mutex // serializes sends
	killed  atomic.Bool
	stopped sync.Once
}

var _ scriptConn = (*worker)(nil)

// spawn starts a worker: the configured command with the memory bound, an empty environment, the root as its
// directory, its stderr kept (the tail) to explain its death.
func spawn(argv []string, memory int64) (*worker, error) {
	args := append(append([]string{}, argv[1:]...), "-memory", strconv.FormatInt(memory, 10))
	cmd := exec.Command(argv[0], args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = workerAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("codemode: a worker's stdin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("codemode: a worker's stdout: %w", err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("codemode: a worker's stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("codemode: starting a sandbox worker: %w", err)
	}
	w := &worker{cmd: cmd, in: in, out: newFrameReader(out, maxFromWorker), stderrDone: make(chan struct{}), memory: memory}
	go func() {
		defer close(w.stderrDone)
		_, _ = io.Copy(&w.stderr, errPipe)
	}()
	return w, nil
}

func (w *worker) send(f frame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return writeFrame(w.in, f)
}

func (w *worker) recv() (frame, error) { return w.out.read() }

func (w *worker) abort() {
	w.killed.Store(true)
	_ = w.cmd.Process.Kill()
}

// stop ends the process and waits for it and its stderr reader.
func (w *worker) stop() {
	w.stopped.Do(func() {
		_ = w.in.Close()
		_ = w.cmd.Process.Kill()
		<-w.stderrDone
		_ = w.cmd.Wait()
	})
}

// failure explains a worker that stopped answering: past its memory bound (the Go runtime's out of memory, or
// a kill it did not get from us), or a crash, with the tail of its stderr.
func (w *worker) failure(err error) error {
	killedByUs := w.killed.Load()
	w.stop()
	text := w.stderr.String()
	ws, _ := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if memoryDeath(text) || (!killedByUs && ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
		return &LimitError{Limit: LimitMemory, Message: fmt.Sprintf("the script used more than the sandbox's %d MiB", w.memory>>20)}
	}
	if i := strings.LastIndex(text, "\n\n"); i > 0 {
		text = text[:i]
	}
	return fmt.Errorf("codemode: the sandbox worker died (%w): %s", err, strings.TrimSpace(text))
}

// memoryDeath tells a Go runtime's fatal errors at the data bound: an allocation, or a thread's stack (which
// the bound counts too), that the OS refused; or a fault in the runtime's own code, which the bound causes
// too, since the runtime does not check every mapping it makes for itself (its collector's work queues).
func memoryDeath(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return !raceDetector && runtimeFault(stderr)
}

// runtimeFault tells a segmentation fault whose first frame is in package runtime: the runtime reports one
// that it did not turn into a panic by the signal's name first, then the faulting goroutine's stack. A fault
// in the interpreter's code is a panic ("panic: runtime error: ..."), and is not one.
func runtimeFault(stderr string) bool {
	if !strings.HasPrefix(stderr, "SIGSEGV: ") && !strings.HasPrefix(stderr, "SIGBUS: ") {
		return false
	}
	_, stack, ok := strings.Cut(stderr, "\ngoroutine ")
	if !ok {
		return false
	}
	_, frames, _ := strings.Cut(stack, "\n")
	return strings.HasPrefix(frames, "runtime.")
}

// tail keeps the first bytes written to it: a Go runtime's fatal error comes first.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := 4096 - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// worker takes an idle worker, or starts one.
func (e *Engine) worker() (*worker, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, errors.New("codemode: the engine is closed")
	}
	if n := len(e.idle); n > 0 {
		w := e.idle[n-1]
		e.idle = e.idle[:n-1]
		e.mu.Unlock()
		return w, nil
	}
	e.mu.Unlock()
	return spawn(e.opts.Worker, e.opts.Memory)
}

// release keeps a worker whose run ended cleanly (or on the script's own error) for the next run; any other
// end replaces it.
func (e *Engine) release(w *worker, err error) {
	var se *ScriptError
	if err == nil || errors.As(err, &se) {
		e.mu.Lock()
		if !e.closed {
			e.idle = append(e.idle, w)
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
	w.stop()
}

// WorkerMain is the sandbox worker: the hidden subcommand the gateway re-executes itself as. It bounds its own
// memory (-memory bytes), then runs the scripts the parent sends on stdin, one at a time, until stdin closes.
// It returns the process's exit code.
func WorkerMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandbox-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	memory := fs.Int64("memory", 256<<20, "the memory bound, in bytes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := limitProcess(*memory); err != nil {
		fmt.Fprintf(stderr, "sandbox-worker: %v\n", err)
		return 1
	}
	// The collector works hard before the OS bound is reached.
	debug.SetMemoryLimit(*memory * 3 / 4)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan frame, 1)
	results := make(chan frame, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(runs)
		defer cancel()
		fr := newFrameReader(stdin, maxToWorker)
		for {
			f, err := fr.read()
			if err != nil {
				return
			}
			ch := results
			if f.T == frameRun {
				ch = runs
			}
			select {
			case ch <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	send := func(f frame) error { return writeFrame(stdout, f) }
	code := 0
	for done := false; !done; {
		select {
		case f, ok := <-runs:
			if !ok {
				done = true
				break
			}
			if f.Spec == nil {
				code, done = 1, true
				break
			}
			o := execute(ctx, f.Run, *f.Spec, results, send)
			if err := send(frame{T: frameDone, Run: f.Run, Outcome: &o}); err != nil {
				code, done = 1, true
			}
		case <-results: // a result that crossed its run's end
		}
	}
	cancel()
	wg.Wait()
	return code
}

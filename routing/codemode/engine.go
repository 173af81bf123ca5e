package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound one run. A zero field takes the engine's value, and the engine's zero fields the defaults.
type Limits struct {
	// WallTime bounds the run from start to end (default 30s).
	WallTime time.Duration
	// CPUTime bounds the time the script spends running, not awaiting calls or timers (default 10s).
	CPUTime time.Duration
	// MaxCalls bounds the tool calls of a run (default 100).
	MaxCalls int
	// MaxConcurrent bounds the calls of a run in flight at once; more wait for a slot (default 16).
	MaxConcurrent int
	// MaxOutput bounds what a run prints and returns, in bytes; past it the output is truncated with a note
	// (default 64 KiB).
	MaxOutput int
	// MaxStackDepth bounds the script's call stack (default 1000 frames).
	MaxStackDepth int
	// MaxTimers bounds the script's pending setTimeouts (default 100).
	MaxTimers int
	// MaxArgBytes bounds the arguments of one tool call, as JSON (default 1 MiB).
	MaxArgBytes int
	// MaxProgress bounds the progress notifications of a run; more are dropped (default 1000).
	MaxProgress int
}

var defaultLimits = Limits{
	WallTime: 30 * time.Second, CPUTime: 10 * time.Second, MaxCalls: 100, MaxConcurrent: 16,
	MaxOutput: 64 << 10, MaxStackDepth: 1000, MaxTimers: 100, MaxArgBytes: 1 << 20, MaxProgress: 1000,
}

// or fills l's zero fields from d.
func (l Limits) or(d Limits) Limits {
	pick := func(a, b int) int {
		if a > 0 {
			return a
		}
		return b
	}
	pickD := func(a, b time.Duration) time.Duration {
		if a > 0 {
			return a
		}
		return b
	}
	return Limits{
		WallTime: pickD(l.WallTime, d.WallTime), CPUTime: pickD(l.CPUTime, d.CPUTime),
		MaxCalls: pick(l.MaxCalls, d.MaxCalls), MaxConcurrent: pick(l.MaxConcurrent, d.MaxConcurrent),
		MaxOutput: pick(l.MaxOutput, d.MaxOutput), MaxStackDepth: pick(l.MaxStackDepth, d.MaxStackDepth),
		MaxTimers: pick(l.MaxTimers, d.MaxTimers), MaxArgBytes: pick(l.MaxArgBytes, d.MaxArgBytes),
		MaxProgress: pick(l.MaxProgress, d.MaxProgress),
	}
}

func (l Limits) script() scriptLimits {
	return scriptLimits{WallTime: l.WallTime, CPUTime: l.CPUTime, MaxCalls: l.MaxCalls, MaxOutput: l.MaxOutput,
		MaxStackDepth: l.MaxStackDepth, MaxTimers: l.MaxTimers, MaxArgBytes: l.MaxArgBytes}
}

// Options configure an Engine.
type Options struct {
	// Worker is the command line of a sandbox worker: the gateway's own executable and its hidden subcommand,
	// which calls WorkerMain. Empty: scripts run in the gateway's process, bounded in everything but memory.
	Worker []string
	// Workers bounds the runs at once, each in a worker of its own (default 4).
	Workers int
	// MaxWaiting bounds the runs waiting for a worker; past it Run fails with ErrBusy (default 16).
	MaxWaiting int
	// Memory bounds a worker's memory, in bytes (default 256 MiB).
	Memory int64
	// Limits are the defaults of every run.
	Limits Limits
}

// ErrBusy is a run refused because every worker is busy and the queue is full.
var ErrBusy = errors.New("code mode is busy: every sandbox worker is running a script and the queue is full; try again later")

// LimitError is a run that broke a limit; Limit names it (LimitWallTime, LimitMemory…).
type LimitError struct {
	Limit   string
	Message string
}

func (e *LimitError) Error() string { return fmt.Sprintf("%s limit: %s", e.Limit, e.Message) }

// ScriptError is a script that failed on its own: a syntax error, an uncaught exception.
type ScriptError struct{ Message string }

func (e *ScriptError) Error() string { return "script error: " + e.Message }

// Run is one script to run.
type Run struct {
	// Code is JavaScript, or TypeScript whose types are stripped. It runs as the body of an async function:
	// top-level await works, and what it returns is the run's value.
	Code string
	// Tools are the tools the script may call, by exact name.
	Tools []Tool
	// Caller makes the calls; Approver is asked before a write (none: writes are refused).
	Caller   Caller
	Approver Approver
	// Progress receives the script's progress(n, total, msg); may be nil.
	Progress func(n, total float64, msg string)
	// Refused, when set, hears each name the script asked of tools that is not among Tools, once a name and at most
	// 16 of them, by the run's end however it ends: such a lookup fails inside the sandbox, and only this tells
	// the caller, which audits it as a refused call. The names the language asks of any object (then, toJSON,
	// toString, ...) are not heard.
	Refused func(name string)
	// Limits override the engine's for this run.
	Limits Limits
}

// Result is what a run printed and returned.
type Result struct {
	// Output is what the script printed, with a note when it was truncated.
	Output string
	// Value is what the script returned, as JSON; nil when it returned nothing or when it did not fit.
	Value json.RawMessage
	// Truncated counts the bytes of output not shown.
	Truncated int
	// Calls counts the tool calls made.
	Calls int
}

// Engine runs scripts, each in a sandbox worker from a bounded pool (or in process, without Options.Worker).
type Engine struct {
	opts    Options
	limits  Limits
	slots   chan struct{}
	waiting atomic.Int64
	runs    atomic.Uint64

	mu     sync.Mutex
	idle   []*worker
	closed bool
}

// NewEngine returns an engine; Close stops its workers.
func NewEngine(opts Options) *Engine {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.MaxWaiting <= 0 {
		opts.MaxWaiting = 16
	}
	if opts.Memory <= 0 {
		opts.Memory = 256 << 20
	}
	return &Engine{opts: opts, limits: opts.Limits.or(defaultLimits), slots: make(chan struct{}, opts.Workers)}
}

// Run runs one script to its end. Its error is a *LimitError, a *ScriptError, ErrBusy, or the context's; the
// Result has what the script printed before it failed.
func (e *Engine) Run(ctx context.Context, r Run) (Result, error) {
	tools, err := toolSet(r.Tools)
	if err != nil {
		return Result{}, err
	}
	if e.waiting.Add(1) > int64(e.opts.MaxWaiting)+int64(e.opts.Workers) {
		e.waiting.Add(-1)
		return Result{}, ErrBusy
	}
	defer e.waiting.Add(-1)
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-e.slots }()
	s := &session{run: r, limits: r.Limits.or(e.limits), tools: tools, id: e.runs.Add(1)}
	if len(e.opts.Worker) == 0 {
		c := newInproc(ctx, s)
		res, err := s.start(ctx, c)
		c.wait()
		return res, err
	}
	w, err := e.worker()
	if err != nil {
		return Result{}, err
	}
	res, err := s.start(ctx, w)
	e.release(w, err)
	return res, err
}

// Close stops the idle workers; busy ones stop when their run ends.
func (e *Engine) Close() error {
	e.mu.Lock()
	idle := e.idle
	e.idle, e.closed = nil, true
	e.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
	return nil
}

// MetaTool is the name of the meta-tool that runs scripts; no run may call it.
const MetaTool = "run_script"

// toolSet indexes a run's tools by exact name.
func toolSet(tools []Tool) (map[string]Tool, error) {
	set := make(map[string]Tool, len(tools))
	for _, t := range tools {
		switch {
		case t.Name == "":
			return nil, errors.New("codemode: a tool without a name")
		case t.Name == MetaTool || t.Name == DescribeTool:
			return nil, fmt.Errorf("codemode: a script cannot call %s: code mode does not nest", t.Name)
		}
		if _, dup := set[t.Name]; dup {
			return nil, fmt.Errorf("codemode: tool %q given twice", t.Name)
		}
		set[t.Name] = t
	}
	return set, nil
}

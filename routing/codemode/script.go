package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/evanw/esbuild/pkg/api"
)

// Names of the limits, as errors name them.
const (
	LimitWallTime   = "wall time"
	LimitCPUTime    = "CPU time"
	LimitMemory     = "memory"
	LimitCalls      = "tool calls per run"
	LimitStackDepth = "call stack depth"
	LimitTimers     = "pending timers"
	LimitArgs       = "tool call arguments size"
)

// interrupt is the value a run's VM is interrupted with: the limit it broke.
type interrupt struct{ limit, msg string }

// compile strips TypeScript from the script and wraps it in an async function, so that top-level await and
// return work; the prefix has no newline, so that a syntax error's line is the script's. A script that is
// JavaScript already (goja parses it) is compiled as it is: esbuild's transform costs a millisecond, more than
// the rest of a run. Where TypeScript and JavaScript read the same text differently, esbuild decides.
func compile(code string) (*goja.Program, error) {
	src := "(async () => {" + code + "\n})()"
	if !maybeTypeArgs.MatchString(code) {
		if ast, err := goja.Parse("script.ts", src); err == nil {
			return goja.CompileAST(ast, false)
		}
	}
	js, err := transpile(src)
	if err != nil {
		return nil, err
	}
	return goja.Compile("script.ts", js, false)
}

// maybeTypeArgs finds what may be a TypeScript call with type arguments, f<T>(x) or f<T>`x`, which JavaScript
// reads as comparisons: a '>' (not of "=>") before '(' or '`'. Such a script goes through esbuild.
var maybeTypeArgs = regexp.MustCompile("(^|[^=])>\\s*[(`]")

// transpile strips TypeScript from src, lowering what goja does not run.
func transpile(src string) (string, error) {
	res := api.Transform(src, api.TransformOptions{
		Loader:     api.LoaderTS,
		Target:     api.ES2017,
		Sourcefile: "script.ts",
	})
	if len(res.Errors) > 0 {
		msgs := make([]string, 0, len(res.Errors))
		for _, m := range res.Errors {
			if m.Location != nil {
				msgs = append(msgs, fmt.Sprintf("script.ts:%d:%d: %s", m.Location.Line, m.Location.Column, m.Text))
			} else {
				msgs = append(msgs, m.Text)
			}
		}
		return "", errors.New(strings.Join(msgs, "; "))
	}
	return string(res.Code), nil
}

// pendingCall is a tool call the script awaits.
type pendingCall struct {
	name            string
	resolve, reject func(any) error
}

// timer is a pending setTimeout.
type timer struct {
	id   int64
	at   time.Time
	fn   goja.Callable
	args []goja.Value
}

// script runs one script on the script side: a goja runtime, its event loop, and the run's budgets. It lives on
// one goroutine; only Interrupt reaches it from others.
type script struct {
	vm      *goja.Runtime
	spec    runSpec
	run     uint64
	send    func(frame) error
	results <-chan frame

	pending  map[int64]pendingCall
	nextID   int64
	calls    int
	timers   []timer
	nextTime int64
	cpuUsed  time.Duration
	out      output
	unknown  []string // names asked of tools that are not in its set, distinct, at most maxUnknown

	errorCtor goja.Value
	jsonParse goja.Callable
	stringify goja.Callable
}

// execute runs spec to its end: the script's promise settles, a limit is broken, or ctx ends (wall time).
// Calls go out through send; their results come in on results.
func execute(ctx context.Context, run uint64, spec runSpec, results <-chan frame, send func(frame) error) outcome {
	s := &script{spec: spec, run: run, send: send, results: results, pending: map[int64]pendingCall{}}
	s.out.max = spec.Limits.MaxOutput
	val, err := s.execute(ctx)
	o := outcome{Output: s.out.String(), Truncated: s.out.dropped, Unknown: s.unknown}
	if err != nil {
		o.Error = toRunError(err)
		return o
	}
	o.Value = s.out.value(val)
	o.Output, o.Truncated = s.out.String(), s.out.dropped
	return o
}

func (s *script) execute(ctx context.Context) (json.RawMessage, error) {
	prog, err := compile(s.spec.Code)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.spec.Limits.WallTime)
	defer cancel()
	s.vm = goja.New()
	s.vm.SetMaxCallStackSize(s.spec.Limits.MaxStackDepth)
	// No clock: Date sees the epoch. setTimeout is the only time a script has.
	s.vm.SetTimeSource(func() time.Time { return time.Unix(0, 0).UTC() })
	stop := context.AfterFunc(ctx, func() { s.vm.Interrupt(wallInterrupt(ctx, s.spec.Limits.WallTime)) })
	defer stop()
	if err := s.install(); err != nil {
		return nil, err
	}
	var v goja.Value
	if err := s.slice(func() (err error) { v, err = s.vm.RunProgram(prog); return err }); err != nil {
		return nil, err
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return nil, errors.New("codemode: the script did not compile to a promise")
	}
	for p.State() == goja.PromiseStatePending {
		if err := s.wait(ctx); err != nil {
			return nil, err
		}
	}
	if p.State() == goja.PromiseStateRejected {
		return nil, &scriptError{msg: s.describe(p.Result())}
	}
	return s.marshal(p.Result())
}

// wallInterrupt names why ctx ended: the run's wall time, or the caller's cancellation.
func wallInterrupt(ctx context.Context, wall time.Duration) interrupt {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return interrupt{LimitWallTime, fmt.Sprintf("the script ran past its wall time limit (%s)", wall)}
	}
	return interrupt{msg: "the run was cancelled"}
}

// wait runs the loop once: a call's result or a due timer, on the VM.
func (s *script) wait(ctx context.Context) error {
	if len(s.pending) == 0 && len(s.timers) == 0 {
		return &scriptError{msg: "the script awaits a promise that nothing will settle"}
	}
	var due <-chan time.Time
	if len(s.timers) > 0 {
		t := time.NewTimer(time.Until(s.timers[s.earliest()].at))
		defer t.Stop()
		due = t.C
	}
	select {
	case <-ctx.Done():
		in := wallInterrupt(ctx, s.spec.Limits.WallTime)
		return &limitError{limit: in.limit, msg: in.msg}
	case f := <-s.results:
		return s.settle(f)
	case <-due:
		i := s.earliest()
		t := s.timers[i]
		s.timers = append(s.timers[:i], s.timers[i+1:]...)
		return s.slice(func() error { _, err := t.fn(goja.Undefined(), t.args...); return err })
	}
}

func (s *script) earliest() int {
	min := 0
	for i, t := range s.timers {
		if t.at.Before(s.timers[min].at) || (t.at.Equal(s.timers[min].at) && t.id < s.timers[min].id) {
			min = i
		}
	}
	return min
}

// settle resolves or rejects the promise of the call f answers. A result of another run, or of no call, is
// dropped.
func (s *script) settle(f frame) error {
	c, ok := s.pending[f.ID]
	if f.T != frameResult || f.Run != s.run || !ok {
		return nil
	}
	delete(s.pending, f.ID)
	return s.slice(func() error {
		if f.Error != "" {
			e, err := s.vm.New(s.errorCtor, s.vm.ToValue(f.Error))
			if err != nil {
				return err
			}
			_ = e.Set("tool", c.name)
			return c.reject(e)
		}
		raw := f.Value
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		v, err := s.jsonParse(goja.Undefined(), s.vm.ToValue(string(raw)))
		if err != nil {
			return err
		}
		return c.resolve(v)
	})
}

// slice runs f on the VM within what is left of the CPU budget. Time on the VM is counted; time awaiting calls
// and timers is not.
func (s *script) slice(f func() error) error {
	left := s.spec.Limits.CPUTime - s.cpuUsed
	cpu := interrupt{LimitCPUTime, fmt.Sprintf("the script ran past its CPU time limit (%s)", s.spec.Limits.CPUTime)}
	if left <= 0 {
		return &limitError{limit: cpu.limit, msg: cpu.msg}
	}
	start := time.Now()
	t := time.AfterFunc(left, func() { s.vm.Interrupt(cpu) })
	err := f()
	fired := !t.Stop()
	s.cpuUsed += time.Since(start)
	if fired && err == nil {
		return &limitError{limit: cpu.limit, msg: cpu.msg}
	}
	return classify(err)
}

// classify turns what goja returned into a run error: an interrupt names its limit, a stack overflow is the
// depth limit, an exception is the script's.
func classify(err error) error {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		if in, ok := ie.Value().(interrupt); ok {
			if in.limit == "" {
				return &scriptError{msg: in.msg}
			}
			return &limitError{limit: in.limit, msg: in.msg}
		}
		return err
	case errors.As(err, &so):
		return &limitError{limit: LimitStackDepth, msg: "the script exceeded the maximum call stack depth"}
	case errors.As(err, &ex):
		return &scriptError{msg: ex.Error()}
	}
	return err
}

// describe renders a thrown or rejected value: an Error's stack when it has one, else its string.
func (s *script) describe(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if st := o.Get("stack"); st != nil && !goja.IsUndefined(st) && !goja.IsNull(st) {
			return st.String()
		}
	}
	if v == nil {
		return "undefined"
	}
	return v.String()
}

// marshal turns the script's return value into JSON; undefined is no value.
func (s *script) marshal(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) {
		return nil, nil
	}
	var str goja.Value
	err := s.slice(func() (err error) { str, err = s.stringify(goja.Undefined(), v); return err })
	if err != nil {
		return nil, fmt.Errorf("the script's return value is not JSON: %w", err)
	}
	if goja.IsUndefined(str) {
		return nil, nil
	}
	return json.RawMessage(str.String()), nil
}

// scriptError is a failure of the script itself: a syntax error, an uncaught exception.
type scriptError struct{ msg string }

func (e *scriptError) Error() string { return e.msg }

// limitError is a run that broke a limit.
type limitError struct{ limit, msg string }

func (e *limitError) Error() string { return e.msg }

func toRunError(err error) *runError {
	var le *limitError
	if errors.As(err, &le) {
		return &runError{Limit: le.limit, Message: le.msg}
	}
	return &runError{Message: err.Error()}
}

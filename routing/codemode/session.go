package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// grace is how long past its wall time a run's script side has to report before the parent ends it: the
// script side names the limit itself when it can.
const grace = time.Second

// scriptConn is the parent's end of a run's script side: a worker process, or a goroutine in process.
type scriptConn interface {
	send(frame) error
	recv() (frame, error)
	// abort ends the script side at once; recv then fails.
	abort()
	// failure explains a recv error: how the script side died.
	failure(err error) error
}

// session is the parent side of one run: it admits the script's calls (exact names, the call budget, consent,
// the concurrency bound), makes them through the Caller and answers them.
type session struct {
	run    Run
	limits Limits
	tools  map[string]Tool
	id     uint64
	conn   scriptConn

	calls    int
	progress int
	refused  map[string]bool // names told to run.Refused
	sem      chan struct{}
	consent  consent
	wg       sync.WaitGroup

	mu     sync.Mutex // guards closed and the order of sends
	closed bool
}

// start runs the session to the script side's outcome, or to the end of the run's time.
func (s *session) start(ctx context.Context, c scriptConn) (Result, error) {
	s.conn = c
	s.sem = make(chan struct{}, s.limits.MaxConcurrent)
	hard, cancel := context.WithTimeout(ctx, s.limits.WallTime+grace)
	defer cancel()
	callCtx, cancelCalls := context.WithCancel(hard)
	stop := context.AfterFunc(hard, c.abort)
	res, err := s.loop(callCtx)
	stop()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	cancelCalls()
	s.wg.Wait()
	res.Calls = s.calls
	var recvErr *recvError
	if errors.As(err, &recvErr) {
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case hard.Err() != nil:
			err = &LimitError{Limit: LimitWallTime, Message: fmt.Sprintf("the script ran past its wall time limit (%s)", s.limits.WallTime)}
		default:
			err = c.failure(recvErr.err)
		}
	}
	return res, err
}

// recvError is the script side gone: the conn's failure says why.
type recvError struct{ err error }

func (e *recvError) Error() string { return e.err.Error() }

func (s *session) loop(ctx context.Context) (Result, error) {
	spec := runSpec{Code: s.run.Code, Limits: s.limits.script()}
	for name := range s.tools {
		spec.Tools = append(spec.Tools, name)
	}
	if err := s.conn.send(frame{T: frameRun, Run: s.id, Spec: &spec}); err != nil {
		return Result{}, &recvError{err}
	}
	for {
		f, err := s.conn.recv()
		if err != nil {
			return Result{}, &recvError{err}
		}
		if f.Run != s.id {
			return Result{}, &recvError{fmt.Errorf("codemode: a frame of run %d in run %d", f.Run, s.id)}
		}
		switch f.T {
		case frameCall:
			if err := s.call(ctx, f); err != nil {
				return Result{}, err
			}
		case frameProgress:
			s.progress++
			if s.run.Progress != nil && s.progress <= s.limits.MaxProgress {
				s.run.Progress(f.N, f.Total, f.Msg)
			}
		case frameDone:
			return s.result(f.Outcome)
		default:
			return Result{}, &recvError{fmt.Errorf("codemode: unexpected frame %q", f.T)}
		}
	}
}

// result turns the script side's outcome into the run's, bounding the output again: the script side is not
// trusted with the limits the parent can check.
func (s *session) result(o *outcome) (Result, error) {
	if o == nil {
		return Result{}, &recvError{errors.New("codemode: a done frame without an outcome")}
	}
	for _, name := range o.Unknown {
		s.refuse(name)
	}
	res := Result{Output: o.Output, Value: o.Value, Truncated: o.Truncated}
	if over := len(res.Output) - s.limits.MaxOutput - 200; over > 0 {
		res.Output = res.Output[:len(res.Output)-over]
		res.Truncated += over
	}
	if len(res.Value) > s.limits.MaxOutput || (len(res.Value) > 0 && !json.Valid(res.Value)) {
		res.Value = nil
	}
	switch {
	case o.Error == nil:
		return res, nil
	case o.Error.Limit != "":
		return res, &LimitError{Limit: o.Error.Limit, Message: o.Error.Message}
	default:
		return res, &ScriptError{Message: o.Error.Message}
	}
}

// refuse tells run.Refused of a name outside the run's tools, once a name and at most maxUnknown of them: the
// script side's count is not trusted.
func (s *session) refuse(name string) {
	if s.run.Refused == nil || s.refused[name] || len(s.refused) >= maxUnknown {
		return
	}
	if s.refused == nil {
		s.refused = map[string]bool{}
	}
	s.refused[name] = true
	s.run.Refused(name)
}

// call admits one call of the script and makes it on a goroutine the session waits for. Only the exact names
// of the run's tools are callable; past the call budget the run ends.
func (s *session) call(ctx context.Context, f frame) error {
	tool, ok := s.tools[f.Name]
	if !ok {
		s.refuse(f.Name)
		s.reply(f.ID, nil, fmt.Sprintf("no tool named %q in this run", f.Name))
		return nil
	}
	s.calls++
	if s.calls > s.limits.MaxCalls {
		return &LimitError{Limit: LimitCalls, Message: fmt.Sprintf("the script made more than %d tool calls", s.limits.MaxCalls)}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		v, msg := s.make(ctx, tool, f.Args)
		s.reply(f.ID, v, msg)
	}()
	return nil
}

// make asks consent for a write, waits for a slot, and calls.
func (s *session) make(ctx context.Context, tool Tool, args json.RawMessage) (json.RawMessage, string) {
	if !tool.ReadOnly {
		if err := s.consent.ask(ctx, s.run.Approver, tool.Name, args); err != nil {
			return nil, err.Error()
		}
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, "the run ended before the call was made"
	}
	raw, err := s.run.Caller.Call(ctx, tool.Name, args)
	<-s.sem
	if err != nil {
		return nil, err.Error()
	}
	return toolValue(raw)
}

// reply answers a call, unless the run is over: a result must not reach the worker's next run.
func (s *session) reply(id int64, v json.RawMessage, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	f := frame{T: frameResult, Run: s.id, ID: id, Value: v, Error: msg}
	if msg != "" {
		f.Value = nil
	}
	// A failed send means the script side is gone; recv reports it.
	_ = s.conn.send(f)
}

// consent remembers a run's "allow for the rest of this run" answers, and asks one question at a time: fifty
// parallel writes to one tool ask once.
type consent struct {
	mu      sync.Mutex
	allowed map[string]bool
}

func (c *consent) ask(ctx context.Context, a Approver, tool string, args json.RawMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allowed[tool] {
		return nil
	}
	if a == nil {
		return fmt.Errorf("%s is a write and this run cannot ask for consent: refused", tool)
	}
	d, err := a.Approve(ctx, tool, args)
	if err != nil {
		return fmt.Errorf("%s is a write and consent could not be asked: %w", tool, err)
	}
	switch d {
	case AllowForRun:
		if c.allowed == nil {
			c.allowed = map[string]bool{}
		}
		c.allowed[tool] = true
		return nil
	case AllowOnce:
		return nil
	}
	return fmt.Errorf("%s is a write and it was declined", tool)
}

// inproc runs a script on a goroutine of the gateway's own process: every limit but memory holds.
type inproc struct {
	ctx     context.Context
	cancel  context.CancelFunc
	toSide  chan frame
	fromIt  chan frame
	done    chan struct{}
	aborted chan struct{}
	once    sync.Once
	started bool
}

var _ scriptConn = (*inproc)(nil)

func newInproc(ctx context.Context, s *session) *inproc {
	ctx, cancel := context.WithCancel(ctx)
	return &inproc{ctx: ctx, cancel: cancel, toSide: make(chan frame, s.limits.MaxConcurrent),
		fromIt: make(chan frame), done: make(chan struct{}), aborted: make(chan struct{})}
}

// send starts the script on a run frame and passes it results.
func (p *inproc) send(f frame) error {
	if f.T == frameRun {
		p.started = true
		go func() {
			defer close(p.done)
			o := execute(p.ctx, f.Run, *f.Spec, p.toSide, p.fromScript)
			_ = p.fromScript(frame{T: frameDone, Run: f.Run, Outcome: &o})
		}()
		return nil
	}
	select {
	case p.toSide <- f:
		return nil
	case <-p.done:
		return errors.New("codemode: the script ended")
	}
}

func (p *inproc) fromScript(f frame) error {
	select {
	case p.fromIt <- f:
		return nil
	case <-p.aborted:
		return errors.New("codemode: the run was aborted")
	}
}

func (p *inproc) recv() (frame, error) {
	select {
	case f := <-p.fromIt:
		return f, nil
	case <-p.aborted:
		return frame{}, errors.New("codemode: the run was aborted")
	}
}

func (p *inproc) abort() {
	p.once.Do(func() {
		close(p.aborted)
		p.cancel()
	})
}

func (p *inproc) failure(err error) error { return err }

// wait ends the script goroutine and waits for it.
func (p *inproc) wait() {
	p.abort()
	if p.started {
		<-p.done
	}
}

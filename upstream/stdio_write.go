package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// maxKeptWriteBuf bounds the framing buffers kept between writes.
const maxKeptWriteBuf = 64 << 10

// stdinWriter puts messages on a child's stdin, one line each, in as few writes as it can: a message written
// while no other is being written goes out at once, in one write of its own; messages that arrive while a write
// is under way wait, and the oldest of them then writes all that are waiting in one write (group commit), so that
// under load a burst costs one system call instead of one each. The queue is bounded by the writers: each waits
// with its one message until it is written or its context ends.
type stdinWriter struct {
	mu      sync.Mutex
	writing bool          // a leader is writing; messages arriving meanwhile queue
	pending []byte        // framed messages waiting, in order
	waiters []*lineWriter // their writers, in the same order
	spare   []byte        // a batch buffer for reuse
	scratch []byte        // a modern request with its _meta, before framing
	err     error         // sticky once a batch was partly written: the framing is broken
}

// lineWriter is one Write waiting in the queue.
type lineWriter struct {
	wake       chan struct{} // signalled (buffered) when state leaves queued
	state      lineState
	gone       bool  // its Write returned while its line was being written
	err        error // when done
	start, end int   // its line in pending, while queued
}

type lineState int

const (
	lineQueued lineState = iota // in pending, waiting
	lineTaken                   // in a batch being written
	lineLead                    // first in pending: write the batch
	lineDone                    // written, or failed with err
)

// Write sends m as one line on the child's stdin. A message containing raw newlines (pretty-printed JSON) is
// compacted first, because stdio framing is one message per line and messages "MUST NOT contain embedded
// newlines". If ctx ends while the message waits, it is withdrawn; while the child is not reading stdin, the
// write is abandoned; if part of a batch was already written the framing is broken and all later writes fail.
// A message already handed to a batch being written when ctx ends goes out with it.
func (c *stdioConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if m.Kind() == jsonrpc.KindInvalid {
		return fmt.Errorf("upstream %s: write: %w", c.name, errNotMessage)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("upstream %s: write: %w", c.name, err)
	}
	select {
	case <-c.stop:
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	default:
	}
	w := &c.w
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	start := len(w.pending)
	var err error
	if w.pending, err = c.frame(w.pending, m); err != nil {
		w.mu.Unlock()
		return err
	}
	if !w.writing {
		w.writing = true
		return c.lead(ctx, len(w.pending)-start)
	}
	lw := &lineWriter{wake: make(chan struct{}, 1), start: start, end: len(w.pending)}
	w.waiters = append(w.waiters, lw)
	w.mu.Unlock()

	select {
	case <-lw.wake:
	case <-ctx.Done():
	case <-c.stop:
	}
	w.mu.Lock()
	switch lw.state {
	case lineDone:
		w.mu.Unlock()
		return lw.err
	case lineLead:
		return c.lead(ctx, lw.end-lw.start)
	case lineTaken:
		lw.gone = true // it goes out with the batch, or, if the batch is not written, not at all
		w.mu.Unlock()
		return fmt.Errorf("upstream %s: write: %w", c.name, context.Cause(ctx))
	}
	// Still queued: withdrawn.
	w.drop(lw)
	w.mu.Unlock()
	if ctx.Err() != nil {
		return fmt.Errorf("upstream %s: write: %w", c.name, ctx.Err())
	}
	return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
}

// frame appends m to dst as one line: its _meta added (a modern request), compacted if it has raw newlines.
// Called with w.mu held.
func (c *stdioConn) frame(dst []byte, m jsonrpc.Message) ([]byte, error) {
	w := &c.w
	msg := m.Raw()
	if rm := c.meta.Load(); rm != nil && m.Kind() == jsonrpc.KindRequest {
		// Modern stdio: the same pipe and framing, but every request carries its _meta. Notifications
		// (notifications/cancelled included: "used only on the stdio transport") and responses go as they are.
		var err error
		if w.scratch, err = rm.inject(w.scratch[:0], m); err != nil {
			return dst, fmt.Errorf("upstream %s: write %s: %w", c.name, m.Method(), err)
		}
		msg = w.scratch
		if cap(w.scratch) > maxKeptWriteBuf {
			w.scratch = nil
		}
	}
	msg = bytes.TrimSpace(msg)
	start := len(dst)
	if bytes.ContainsAny(msg, "\r\n") {
		dst = jsonrpc.Compact(dst, msg)
		if bytes.ContainsAny(dst[start:], "\r\n") {
			// Only invalid JSON keeps a raw newline after compaction.
			return dst[:start], fmt.Errorf("upstream %s: write: message is not valid JSON", c.name)
		}
	} else {
		dst = append(dst, msg...)
	}
	if len(dst) == start {
		return dst, fmt.Errorf("upstream %s: write: empty message", c.name)
	}
	return append(dst, '\n'), nil
}

// lead writes every pending message in one write, the leader's own first (own bytes), and hands the lead to the
// next writer waiting. Called with w.mu held; returns with it released.
func (c *stdioConn) lead(ctx context.Context, own int) error {
	w := &c.w
	if err := ctx.Err(); err != nil {
		w.cut(own)
		w.handOff()
		w.mu.Unlock()
		return fmt.Errorf("upstream %s: write: %w", c.name, err)
	}
	batch, taken := w.pending, w.waiters
	for _, lw := range taken {
		lw.state = lineTaken
	}
	w.pending, w.spare, w.waiters = w.spare[:0], nil, nil
	w.mu.Unlock()

	n, err := c.writeStdin(ctx, batch)

	w.mu.Lock()
	switch {
	case err == nil:
	case n == 0 && ctx.Err() != nil:
		// The leader gave up before a byte went out: the others wait on, first in line, for the next leader.
		w.requeue(batch[own:], taken)
		taken = nil
	default:
		if n > 0 {
			w.err = err
		}
	}
	for _, lw := range taken {
		lw.state, lw.err = lineDone, err
		lw.wake <- struct{}{}
	}
	if cap(batch) <= maxKeptWriteBuf {
		w.spare = batch[:0]
	}
	w.handOff()
	w.mu.Unlock()
	return err
}

// writeStdin writes b to the child's stdin. A deadline in the past makes a blocked write return; that is how a
// context abandons a write to a child that stopped reading stdin.
func (c *stdioConn) writeStdin(ctx context.Context, b []byte) (int, error) {
	var n int
	var err error
	if ctx.Done() == nil {
		n, err = c.stdin.Write(b)
	} else {
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(fired)
			_ = c.stdin.SetWriteDeadline(time.Unix(1, 0))
		})
		n, err = c.stdin.Write(b)
		if !stop() {
			<-fired
			_ = c.stdin.SetWriteDeadline(time.Time{})
		}
	}
	if err == nil {
		return n, nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		err = ctx.Err()
	}
	return n, fmt.Errorf("upstream %s: write: %w", c.name, err)
}

// handOff gives the lead to the oldest waiting writer, or ends the writing when none waits.
func (w *stdinWriter) handOff() {
	if len(w.waiters) == 0 {
		w.writing = false
		return
	}
	lw := w.waiters[0]
	w.waiters = w.waiters[1:]
	lw.state = lineLead
	lw.wake <- struct{}{}
}

// cut removes the first n bytes of pending (the leader's own line), moving the waiters' lines.
func (w *stdinWriter) cut(n int) {
	w.pending = w.pending[:copy(w.pending, w.pending[n:])]
	for _, lw := range w.waiters {
		lw.start -= n
		lw.end -= n
	}
}

// drop withdraws a queued writer's line.
func (w *stdinWriter) drop(lw *lineWriter) {
	n := lw.end - lw.start
	w.pending = append(w.pending[:lw.start], w.pending[lw.end:]...)
	i := 0
	for _, o := range w.waiters {
		if o == lw {
			continue
		}
		if o.start > lw.start {
			o.start -= n
			o.end -= n
		}
		w.waiters[i] = o
		i++
	}
	clear(w.waiters[i:])
	w.waiters = w.waiters[:i]
}

// requeue puts lines taken into a batch that was not written back before those that queued since.
func (w *stdinWriter) requeue(lines []byte, taken []*lineWriter) {
	off := 0
	if len(taken) > 0 {
		off = taken[0].start
	}
	for _, lw := range taken {
		lw.state = lineQueued
		lw.start -= off
		lw.end -= off
	}
	for _, lw := range w.waiters {
		lw.start += len(lines)
		lw.end += len(lines)
	}
	w.pending = append(append(make([]byte, 0, len(lines)+len(w.pending)), lines...), w.pending...)
	w.waiters = append(taken, w.waiters...)
	for _, lw := range taken {
		if lw.gone {
			w.drop(lw)
		}
	}
}

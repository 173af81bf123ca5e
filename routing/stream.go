package routing

import (
	"context"
	"sync"
)

// msgClass tells a Stream how to treat a message when the client is slow.
type msgClass uint8

const (
	// ClassNotice is a notification (progress, log, list_changed): dropped, and counted, when the queue is full.
	ClassNotice msgClass = iota
	// classRequest is a server→client request: refused when the queue is full, so the caller can answer the
	// upstream with an error instead of leaving it waiting.
	classRequest
	// ClassFinal is the response to a client request. It is never dropped: there is at most one per call, so the
	// number of calls in flight already bounds it.
	ClassFinal
)

// Stream is the bounded outbound queue of messages for one client stream: the response stream of one HTTP POST
// (one request, or a batch of them), or a session's standalone stream. Routing pushes; the front end drains it
// with Next. A slow client therefore never blocks an upstream reader that serves other clients (design §9).
type Stream struct {
	mu      sync.Mutex
	q       [][]byte
	finals  []bool
	max     int
	want    int // finals still expected; -1 for a standalone stream, which never completes on its own
	queued  int // non-final messages in q
	closed  bool
	dropped int
	onDrop  func() // counts drops in metrics; set by Router.NewStream
	wake    chan struct{}
	script  string // code mode: the run whose script's call this stream answers, for the audit (codemodecall.go)
	// qbuf and fbuf hold the first messages: most streams carry one answer and a notice or two, and growing the
	// queue from nil would cost two allocations a request.
	qbuf [2][]byte
	fbuf [2]bool
}

// newStream returns a stream that completes after finals responses (or after as many calls end without one);
// finals < 0 makes a standalone stream that runs until Close. maxQueued bounds the non-final messages waiting.
func newStream(finals, maxQueued int) *Stream {
	if maxQueued <= 0 {
		maxQueued = 256
	}
	s := &Stream{want: finals, max: maxQueued, wake: make(chan struct{}, 1)}
	s.q, s.finals = s.qbuf[:0], s.fbuf[:0]
	return s
}

// Push queues msg. It reports false when the message was not queued: the stream is closed, or it is full and
// msg is not a final response.
func (s *Stream) Push(msg []byte, c msgClass) bool {
	s.mu.Lock()
	if s.closed || (c != ClassFinal && s.queued >= s.max) {
		drop := !s.closed && c == ClassNotice
		if drop {
			s.dropped++
		}
		s.mu.Unlock()
		if drop && s.onDrop != nil {
			s.onDrop()
		}
		return false
	}
	s.q = append(s.q, msg)
	s.finals = append(s.finals, c == ClassFinal)
	if c != ClassFinal {
		s.queued++
	}
	s.mu.Unlock()
	s.signal()
	return true
}

// Abandon records that one expected response will never come (the call was cancelled); a stream waiting for
// nothing else completes.
func (s *Stream) Abandon() {
	s.mu.Lock()
	if s.want > 0 {
		s.want--
	}
	s.mu.Unlock()
	s.signal()
}

// Close ends the stream: Next returns what is queued, then reports the end.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

// Closed reports whether the stream was closed.
func (s *Stream) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Dropped reports how many notifications were dropped because the client did not keep up.
func (s *Stream) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next message and whether it is a final response. ok is false when the stream is complete
// (every expected response delivered or abandoned, or the stream closed and drained) or ctx is done.
func (s *Stream) Next(ctx context.Context) (msg []byte, final, ok bool) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			msg, final = s.pop()
			s.mu.Unlock()
			return msg, final, true
		}
		done := s.closed || s.want == 0
		s.mu.Unlock()
		if done {
			return nil, false, false
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, false, false
		}
	}
}

// TryNext is Next without waiting: ok is false when nothing is queued right now.
func (s *Stream) TryNext() (msg []byte, final, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) == 0 {
		return nil, false, false
	}
	msg, final = s.pop()
	return msg, final, true
}

// pop removes the head of the queue; s.mu is held.
func (s *Stream) pop() ([]byte, bool) {
	msg, final := s.q[0], s.finals[0]
	s.q[0] = nil
	s.q, s.finals = s.q[1:], s.finals[1:]
	if final {
		if s.want > 0 {
			s.want--
		}
	} else {
		s.queued--
	}
	return msg, final
}

// Pending reports how many responses the stream still waits for (negative for a standalone stream).
func (s *Stream) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.want - (len(s.q) - s.queued)
}

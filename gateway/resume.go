package gateway

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

const (
	// maxLoggedEvents bounds the replay log of one stream. A client that reconnects after more than this many
	// events has gone by gets what is left: resumption is best effort, the spec's "MAY replay".
	maxLoggedEvents = 256
	// keepFinished is how long a finished stream stays resumable, for a client that lost its connection just
	// before the last event.
	keepFinished = 2 * time.Minute
	// standaloneStream is the id of a session's GET stream; POST streams count up from 1.
	standaloneStream = 0
)

// replayStream is one SSE stream of a session with its event log, so that a client that loses the connection
// can resume it with Last-Event-ID on another GET ("Resumption is always via HTTP GET", 2025-11-25) and get
// what it missed from that stream only: "The server MUST NOT replay messages that would have been delivered on a
// different stream."
type replayStream struct {
	id  int64
	src *routing.Stream

	mu       sync.Mutex
	log      []loggedEvent
	seq      int64
	claimed  bool
	stop     context.CancelFunc // ends the claiming connection's writing, for a takeover
	released chan struct{}      // closed when the current claim is released
	finished time.Time
	left     time.Time // when the last connection left it, for streams nobody came back for
}

type loggedEvent struct {
	seq  int64
	data []byte
}

// claim makes the caller the one connection writing the stream; a stream is written by one connection at a time.
// stop, when set, lets a resuming client take the stream over (see takeover).
func (rs *replayStream) claim(stop context.CancelFunc) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.claimed {
		return false
	}
	rs.claimed, rs.stop, rs.released = true, stop, make(chan struct{})
	return true
}

// takeover claims a stream another connection still holds: a client resuming with Last-Event-ID has left that
// connection, though the server may not have noticed yet. The old writer is stopped and its release awaited
// (briefly).
func (rs *replayStream) takeover(stop context.CancelFunc) bool {
	if rs.claim(stop) {
		return true
	}
	rs.mu.Lock()
	old, released := rs.stop, rs.released
	rs.mu.Unlock()
	if old != nil {
		old()
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-released:
	case <-t.C:
	}
	return rs.claim(stop)
}

func (rs *replayStream) release(finished bool) {
	rs.mu.Lock()
	rs.claimed = false
	if rs.released != nil {
		close(rs.released)
		rs.released = nil
	}
	rs.left = time.Now()
	if finished && rs.finished.IsZero() {
		rs.finished = time.Now()
	}
	rs.mu.Unlock()
}

// record logs a message before it is written, so that a write that fails can be replayed.
func (rs *replayStream) record(data []byte) int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.seq++
	if len(rs.log) == maxLoggedEvents {
		copy(rs.log, rs.log[1:])
		rs.log = rs.log[:maxLoggedEvents-1]
	}
	rs.log = append(rs.log, loggedEvent{seq: rs.seq, data: data})
	return rs.seq
}

// primeSeq reserves a sequence number for the priming event, which carries an id and no data.
func (rs *replayStream) primeSeq() int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.seq++
	return rs.seq
}

// seqNow is the sequence number of the last event recorded.
func (rs *replayStream) seqNow() int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.seq
}

// since returns the logged events after seq.
func (rs *replayStream) since(seq int64) []loggedEvent {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, e := range rs.log {
		if e.seq > seq {
			return append([]loggedEvent(nil), rs.log[i:]...)
		}
	}
	return nil
}

func eventID(stream, seq int64) string {
	return strconv.FormatInt(stream, 10) + "_" + strconv.FormatInt(seq, 10)
}

// parseEventID reads an id minted by eventID: the stream it belongs to and its place in it.
func parseEventID(s string) (stream, seq int64, ok bool) {
	a, b, found := strings.Cut(s, "_")
	if !found {
		return 0, 0, false
	}
	stream, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	return stream, seq, err1 == nil && err2 == nil && stream >= 0 && seq >= 0
}

// holds reports whether lastEventID names a stream this replica keeps for the session (one it made resumable
// itself while the shared log was down).
func (ss *sessionStreams) holds(lastEventID string) bool {
	stream, _, ok := parseEventID(lastEventID)
	return ok && stream != standaloneStream && ss.get(stream) != nil
}

// sessionStreams holds the resumable streams of one session.
type sessionStreams struct {
	mu      sync.Mutex
	next    int64
	streams map[int64]*replayStream
}

// streamsRegistry maps sessions to their resumable streams; an entry lives as long as its session.
type streamsRegistry struct {
	mu       sync.Mutex
	sessions map[string]*sessionStreams
}

// of returns the streams of a session, creating them (with the standalone stream) on first use.
func (reg *streamsRegistry) of(sess *routing.Session) *sessionStreams {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if ss := reg.sessions[sess.ID()]; ss != nil {
		return ss
	}
	if reg.sessions == nil {
		reg.sessions = map[string]*sessionStreams{}
	}
	ss := &sessionStreams{streams: map[int64]*replayStream{
		standaloneStream: {id: standaloneStream, src: sess.Standalone()},
	}}
	reg.sessions[sess.ID()] = ss
	id := sess.ID()
	go func() { // owned by the session: ends with it
		<-sess.Done()
		reg.mu.Lock()
		delete(reg.sessions, id)
		reg.mu.Unlock()
	}()
	return ss
}

// add registers a new POST stream and forgets finished ones that are old enough.
func (ss *sessionStreams) add(src *routing.Stream) *replayStream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := time.Now()
	for id, rs := range ss.streams {
		if id == standaloneStream {
			continue
		}
		rs.mu.Lock()
		// Forget finished streams after a while, and streams their client left and never came back for: their
		// calls' late answers have nowhere to go.
		old := !rs.finished.IsZero() && now.Sub(rs.finished) > keepFinished ||
			!rs.claimed && !rs.left.IsZero() && now.Sub(rs.left) > keepFinished
		rs.mu.Unlock()
		if old {
			rs.src.Close()
			delete(ss.streams, id)
		}
	}
	ss.next++
	rs := &replayStream{id: ss.next, src: src}
	ss.streams[rs.id] = rs
	return rs
}

func (ss *sessionStreams) get(id int64) *replayStream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.streams[id]
}

// pump writes a stream to one connection: first what was logged after `after`, then live messages until the
// stream completes (true) or the connection ends (false; the stream stays resumable). Standalone streams never
// complete; keepAlive paces comments on them.
func (s *Server) pump(ctx context.Context, sess *routing.Session, sw *sseWriter, rs *replayStream, after int64) bool {
	if rs.id == standaloneStream {
		// On shutdown the standalone stream ends with a reconnection hint; a POST stream runs until its answer.
		var cancel context.CancelFunc
		ctx, cancel = s.untilDrain(ctx)
		defer cancel()
	}
	for _, e := range rs.since(after) {
		if sw.event(eventID(rs.id, e.seq), e.data) != nil {
			return false
		}
	}
	for {
		nctx, cancel := context.WithTimeout(ctx, s.opts.KeepAlive)
		msg, _, ok := rs.src.Next(nctx)
		cancel()
		switch {
		case ok:
			if sw.event(eventID(rs.id, rs.record(msg)), msg) != nil {
				return false
			}
		case ctx.Err() != nil:
			s.retryHint(sw)
			return false
		case rs.src.Closed() || rs.src.Pending() == 0:
			return true
		default:
			if sw.comment("keep-alive") != nil {
				return false
			}
			sess.StreamOpened() // touch: a client that listens is not idle
			sess.StreamClosed()
		}
	}
}

// untilDrain derives a context that also ends when the server starts shutting down.
func (s *Server) untilDrain(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() { // owned by the stream: ends with ctx
		select {
		case <-s.draining:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// isDraining reports whether shutdown has begun.
func (s *Server) isDraining() bool { return isDone(s.draining) }

// retryHint tells a client of a stream ended by shutdown when to reconnect: the SSE retry field, in a block with
// no data, which dispatches no event.
func (s *Server) retryHint(sw *sseWriter) {
	if s.isDraining() {
		sw.buf = append(sw.buf[:0], "retry: 1000\n\n"...)
		_ = sw.write()
	}
}

// appendPriming appends the priming event: an id and empty data, so that the client can resume from it.
func appendPriming(dst []byte, id string) []byte {
	return sse.AppendEvent(dst, sse.Event{ID: id, Retry: primingRetry})
}

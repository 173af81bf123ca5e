package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// memoryLog is one SSE stream of a session with its event log in this replica's memory, so that a client that
// loses the connection can resume it with Last-Event-ID on another GET ("Resumption is always via HTTP GET",
// 2025-11-25) and get what it missed from that stream only: "The server MUST NOT replay messages that would have
// been delivered on a different stream." Its event ids are "<stream>_<seq>". The stream's source stays with it:
// whichever connection claims the stream drains the source, so a claim is exclusive to one connection.
type memoryLog struct {
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

func (rs *memoryLog) stream() int64 { return rs.id }

// Claim makes the caller the one connection writing the stream. With takeover it claims a stream another
// connection still holds: a client resuming with Last-Event-ID has left that connection, though the server may
// not have noticed yet. The old writer is stopped and its release awaited (briefly).
func (rs *memoryLog) Claim(_ context.Context, takeover bool, stop context.CancelFunc) error {
	if rs.claim(stop) {
		return nil
	}
	if !takeover {
		return errStreamHeld
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
	if rs.claim(stop) {
		return nil
	}
	return errStreamHeld
}

func (rs *memoryLog) claim(stop context.CancelFunc) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.claimed {
		return false
	}
	rs.claimed, rs.stop, rs.released = true, stop, make(chan struct{})
	return true
}

// Held is always true: a takeover here stops the old writer through its context instead.
func (rs *memoryLog) Held(context.Context) bool { return true }

// Release gives the claim up; a complete POST stream is finished (and forgotten keepFinished later). The source
// stays with the stream for the next claimer.
func (rs *memoryLog) Release(_ *routing.Stream, complete bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.claimed = false
	if rs.released != nil {
		close(rs.released)
		rs.released = nil
	}
	rs.left = time.Now()
	if complete && rs.id != standaloneStream && rs.finished.IsZero() {
		rs.finished = time.Now()
	}
}

// Append logs a message before it is written, so that a write that fails can be replayed. nil data reserves a
// sequence number for the priming event, which carries an id and no data and is not logged.
func (rs *memoryLog) Append(_ context.Context, data []byte) (string, error) {
	rs.mu.Lock()
	rs.seq++
	seq := rs.seq
	if data != nil {
		if len(rs.log) == maxLoggedEvents {
			copy(rs.log, rs.log[1:])
			rs.log = rs.log[:maxLoggedEvents-1]
		}
		rs.log = append(rs.log, loggedEvent{seq: seq, data: data})
	}
	rs.mu.Unlock()
	return eventID(rs.id, seq), nil
}

// Read returns the logged events after the event id after ("" or an id of another stream: all of them). It does
// not wait: a stream in memory is always written from its source, and its log is only replayed.
func (rs *memoryLog) Read(_ context.Context, after string, _ time.Duration) ([]state.Event, string, error) {
	var from int64
	if stream, seq, ok := parseEventID(after); ok && stream == rs.id {
		from = seq
	}
	rs.mu.Lock()
	var logged []loggedEvent
	for i, e := range rs.log {
		if e.seq > from {
			logged = append([]loggedEvent(nil), rs.log[i:]...)
			break
		}
	}
	rs.mu.Unlock()
	if len(logged) == 0 {
		return nil, after, nil
	}
	events := make([]state.Event, len(logged))
	for i, e := range logged {
		events[i] = state.Event{ID: eventID(rs.id, e.seq), Data: e.data}
	}
	return events, events[len(events)-1].ID, nil
}

// sessionStreams holds the resumable streams of one session on this replica, and the workers that serve the
// session's streams in the background (forwarding into the shared log); they end with the session, and the
// registry forgets the session once they have.
type sessionStreams struct {
	ctx context.Context // ends with the session

	mu      sync.Mutex
	next    int64
	streams map[int64]*memoryLog
	ended   bool // no worker starts any more
	workers sync.WaitGroup
}

// streamsRegistry maps sessions to their resumable streams; an entry lives as long as its session.
type streamsRegistry struct {
	mu       sync.Mutex
	sessions map[string]*sessionStreams
}

// of returns the streams of a session, creating them (with the standalone stream) on first use.
func (reg *streamsRegistry) of(sess session) *sessionStreams {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if ss := reg.sessions[sess.ID()]; ss != nil {
		return ss
	}
	if reg.sessions == nil {
		reg.sessions = map[string]*sessionStreams{}
	}
	ss := &sessionStreams{ctx: sessionContext(sess), streams: map[int64]*memoryLog{
		standaloneStream: {id: standaloneStream, src: sess.Standalone()},
	}}
	reg.sessions[sess.ID()] = ss
	id := sess.ID()
	context.AfterFunc(ss.ctx, func() {
		ss.mu.Lock()
		ss.ended = true
		ss.mu.Unlock()
		ss.workers.Wait()
		reg.mu.Lock()
		if reg.sessions[id] == ss {
			delete(reg.sessions, id)
		}
		reg.mu.Unlock()
	})
	return ss
}

// goWork runs work for the session in the background, with a context that ends with the session; the session's
// entry waits for it before it is forgotten. It reports false, not running work, once the session has ended.
func (ss *sessionStreams) goWork(work func(ctx context.Context)) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ended {
		return false
	}
	ss.workers.Add(1)
	go func() {
		defer ss.workers.Done()
		work(ss.ctx)
	}()
	return true
}

// holds reports whether lastEventID names a stream this replica keeps for the session (one it made resumable
// itself while the shared log was down).
func (ss *sessionStreams) holds(lastEventID string) bool {
	stream, _, ok := parseEventID(lastEventID)
	return ok && stream != standaloneStream && ss.get(stream) != nil
}

// add registers a new POST stream and forgets finished ones that are old enough.
func (ss *sessionStreams) add(src *routing.Stream) *memoryLog {
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
	rs := &memoryLog{id: ss.next, src: src}
	ss.streams[rs.id] = rs
	return rs
}

func (ss *sessionStreams) get(id int64) *memoryLog {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.streams[id]
}

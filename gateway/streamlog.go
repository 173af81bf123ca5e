package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

// Resumable streams (MCP streamable HTTP, "Resumability and Redelivery"). Every SSE stream a session has with a
// client (a POST's answer stream, the standalone GET stream) is written through a streamLog: each event is logged
// before it is written, under an id that names the stream, so that a client that loses the connection resumes
// the stream with GET and Last-Event-ID and gets what it missed from that stream only. Two logs implement it:
// memoryLog (resume.go) keeps a stream on this replica; sharedLog (sharedstreams.go) keeps it in the shared event
// log of routing/state, where every replica reads it. pump (below) is the one writer of both.

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

// streamLog is the event log of one resumable stream as one connection sees it: the connection claims the stream
// (one connection writes a stream at a time), logs what it writes, and reads back what it must replay.
type streamLog interface {
	// stream is the stream's number in its session: the <stream> of its event ids.
	stream() int64
	// Append logs data as the stream's next event and returns the event's id. nil data is the priming event,
	// which carries an id and is never delivered. On an error the event is still written, without an id.
	Append(ctx context.Context, data []byte) (id string, err error)
	// Read returns the deliverable events after the event id after ("" for all retained) and the id to read on
	// from. With wait > 0 it waits that long for an event when there is none. It reports errStreamDone once the
	// stream is complete and read through, errTakenOver when another connection took the stream over, and an
	// *orphanedError when the stream's producer is gone.
	Read(ctx context.Context, after string, wait time.Duration) (events []state.Event, next string, err error)
	// Claim makes the connection the stream's one writer; stop ends that connection's writing if another takes
	// the stream over. Without takeover a stream written elsewhere is refused with errStreamHeld; with it (a
	// client resuming with Last-Event-ID has left its old connection) the other writer is stopped.
	Claim(ctx context.Context, takeover bool, stop context.CancelFunc) error
	// Held reports whether the claim still stands, and renews it where claims lapse.
	Held(ctx context.Context) bool
	// Release gives the claim up. src is the local source the connection drained (nil when it followed the
	// log), complete whether it drained it to the end.
	Release(src *routing.Stream, complete bool)
}

var (
	_ streamLog = (*memoryLog)(nil)
	_ streamLog = (*sharedLog)(nil)
)

var (
	// errStreamDone: the stream is complete and every event was read.
	errStreamDone = errors.New("the stream is complete")
	// errTakenOver: another connection claimed the stream.
	errTakenOver = errors.New("the stream was taken over by another connection")
	// errStreamHeld: another connection writes the stream (HTTP 409).
	errStreamHeld = errors.New("this stream is already being read by another connection")
	// errStale: a followed stream stayed silent longer than a log lives.
	errStale = errors.New("the stream stayed silent longer than its log lives")
)

// streamStart says where a connection starts writing a stream.
type streamStart struct {
	held   [][]byte // messages already taken from the source: logged and written first
	replay bool     // write what the log holds after `after` first (a resumption, or a fresh standalone GET)
	after  string
}

// streamHub writes every SSE stream of the HTTP front ends to its client, resumable: it keeps the session's
// streams on this replica (streamsRegistry), logs them in the shared event log when there is one (sharedLog),
// forwards each held session's standalone messages there, and ends the long-lived streams on shutdown.
type streamHub struct {
	events       EventLog // nil: streams are resumable on this replica only
	peers        replicas // who produces a stream logged elsewhere
	keepAlive    time.Duration
	writeTimeout time.Duration
	log          *slog.Logger

	streams streamsRegistry
	fwd     forwarders
	// logDownUntil (unix ns) skips event-log appends for a while after one failed.
	logDownUntil atomic.Int64

	draining  chan struct{} // closed when shutdown begins
	drainOnce sync.Once
}

// drain ends the standalone and legacy streams, which would otherwise hold a shutdown until its deadline.
func (h *streamHub) drain() { h.drainOnce.Do(func() { close(h.draining) }) }

// respondStream answers a request with an SSE stream, resumable: if the connection drops, the call goes on
// ("Disconnection SHOULD NOT be interpreted as the client cancelling its request") and the client can pick up the
// rest with GET and Last-Event-ID. held are messages already taken from out. With the shared log the stream is
// resumable on any replica; while the log is down it is made resumable here instead (a resumption that lands
// elsewhere finds nothing), rather than having no ids at all.
func (h *streamHub) respondStream(ctx context.Context, w http.ResponseWriter, sess session, out *routing.Stream, held, ids [][]byte) {
	var lg streamLog
	if h.events != nil && !h.logIsDown() {
		if shared := h.newSharedStream(sess, ids); shared != nil {
			lg = shared
		}
	}
	if lg == nil {
		lg = h.streams.of(sess).add(out)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	_ = lg.Claim(ctx, false, stop) // a new stream: nobody else can hold it
	sw := h.startSSE(w, sess, lg)
	lg.Release(out, h.pump(ctx, sess, sw, lg, out, streamStart{held: held}))
}

// startSSE answers with an event stream. For a resumable stream and a client of 2025-11-25 or later it first
// sends the priming event: "The server SHOULD immediately send an SSE event consisting of an event ID and an
// empty data field in order to prime the client to reconnect".
func (h *streamHub) startSSE(w http.ResponseWriter, sess session, lg streamLog) *sseWriter {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: h.writeTimeout}
	if lg != nil && protocol.AtLeast(sess.ProtocolVersion(), protocol.V20251125) {
		if id, err := lg.Append(context.Background(), nil); err == nil {
			sw.buf = appendPriming(sw.buf[:0], id)
			_ = sw.write()
			return sw
		}
	}
	_ = sw.rc.Flush()
	return sw
}

// pump writes a stream to one connection: the held messages, then what the log holds after from.after (when
// replaying), then live messages until the stream completes (true) or the connection ends (false; the stream
// stays resumable). With a local source (src) it drains it, logging every message before writing it; without
// one it follows the log, which another replica fills. Standalone streams never complete; keepAlive paces
// comments on idle streams.
func (h *streamHub) pump(ctx context.Context, sess session, sw *sseWriter, lg streamLog, src *routing.Stream, from streamStart) bool {
	if lg.stream() == standaloneStream {
		// On shutdown the standalone stream ends with a reconnection hint; a POST stream runs until its answer.
		var cancel context.CancelFunc
		ctx, cancel = h.untilDrain(ctx)
		defer cancel()
	}
	for _, m := range from.held {
		if !h.deliver(ctx, sw, lg, m) {
			return false
		}
	}
	after := from.after
	if from.replay {
		events, next, err := lg.Read(ctx, after, 0)
		if end, complete := h.readEnd(sw, err); end {
			return complete
		}
		if !writeEvents(sw, events) {
			return false
		}
		after = next
	}
	if src == nil {
		return h.follow(ctx, sess, sw, lg, after)
	}
	for {
		nctx, cancel := context.WithTimeout(ctx, h.keepAlive)
		msg, _, ok := src.Next(nctx)
		cancel()
		switch {
		case ok:
			if !h.deliver(ctx, sw, lg, msg) {
				return false
			}
		case ctx.Err() != nil:
			h.retryHint(sw)
			return false
		case src.Closed() || src.Pending() == 0:
			return true
		case !lg.Held(ctx):
			return false
		default:
			if sw.comment("keep-alive") != nil {
				return false
			}
			sess.StreamOpened() // touch: a client that listens is not idle
			sess.StreamClosed()
		}
	}
}

// deliver logs one message and writes it, unless the stream was taken over meanwhile (the message is logged
// for the connection that took it). It reports false when the connection must stop.
func (h *streamHub) deliver(ctx context.Context, sw *sseWriter, lg streamLog, msg []byte) bool {
	id, err := lg.Append(ctx, msg)
	if err != nil {
		id = "" // unlogged: still delivered, just not resumable
	}
	return lg.Held(ctx) && sw.event(id, msg) == nil
}

// follow writes a stream produced elsewhere, as the log receives it.
func (h *streamHub) follow(ctx context.Context, sess session, sw *sseWriter, lg streamLog, after string) bool {
	// The followed stream ends with the session on this replica too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(sessionContext(sess), cancel)()
	// Short waits: a blocked read of the log cannot be interrupted, so its length bounds how long a closed
	// stream lingers; keep-alives still go out only every KeepAlive.
	wait := min(h.keepAlive, 2*time.Second)
	lastWrite := time.Now()
	for {
		events, next, err := lg.Read(ctx, after, wait)
		if !writeEvents(sw, events) {
			return false
		}
		if len(events) > 0 {
			lastWrite = time.Now()
		}
		if next != "" {
			after = next
		}
		if end, complete := h.readEnd(sw, err); end {
			return complete
		}
		switch {
		case ctx.Err() != nil:
			h.retryHint(sw)
			return false
		case err != nil:
			h.log.Debug("shared stream read failed", "err", err)
			if sw.comment("keep-alive") != nil || sleepCtx(ctx, time.Second) != nil {
				return false
			}
		case !lg.Held(ctx):
			return false
		case len(events) == 0 && time.Since(lastWrite) >= h.keepAlive:
			if sw.comment("keep-alive") != nil {
				return false
			}
			lastWrite = time.Now()
			sess.StreamOpened() // touch: a client that listens is not idle, here or in the shared record
			sess.StreamClosed()
		}
	}
}

// readEnd tells whether a Read's error ends the connection's writing, and whether the stream is then complete.
// Transient errors (the log unreachable) end nothing.
func (h *streamHub) readEnd(sw *sseWriter, err error) (end, complete bool) {
	var orphaned *orphanedError
	switch {
	case err == nil:
		return false, false
	case errors.Is(err, errStreamDone):
		return true, true
	case errors.Is(err, errTakenOver), errors.Is(err, errStale):
		return true, false
	case errors.As(err, &orphaned):
		answerOrphans(sw, orphaned.ids)
		return true, false
	}
	return false, false
}

// writeEvents writes logged events; false when the connection failed.
func writeEvents(sw *sseWriter, events []state.Event) bool {
	for _, e := range events {
		if sw.event(e.ID, e.Data) != nil {
			return false
		}
	}
	return true
}

// sleepCtx waits d, or less when ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// doneContext is a context that ends when done is closed: it lets context.AfterFunc and context.WithCancel watch
// a session's end or the server's shutdown, which are channels, without a goroutine of ours to join.
type doneContext struct {
	context.Context // Background: no deadline, no values
	done            <-chan struct{}
}

func (c doneContext) Done() <-chan struct{} { return c.done }

func (c doneContext) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// sessionContext ends when the session does.
func sessionContext(sess session) context.Context {
	return doneContext{Context: context.Background(), done: sess.Done()}
}

// untilDrain derives a context that also ends when the server starts shutting down.
func (h *streamHub) untilDrain(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(doneContext{Context: context.Background(), done: h.draining}, cancel)
	return ctx, func() { stop(); cancel() }
}

// isDraining reports whether shutdown has begun.
func (h *streamHub) isDraining() bool { return isDone(h.draining) }

// retryHint tells a client of a stream ended by shutdown when to reconnect: the SSE retry field, in a block with
// no data, which dispatches no event.
func (h *streamHub) retryHint(sw *sseWriter) {
	if h.isDraining() {
		sw.buf = append(sw.buf[:0], "retry: 1000\n\n"...)
		_ = sw.write()
	}
}

// appendPriming appends the priming event: an id and empty data, so that the client can resume from it.
func appendPriming(dst []byte, id string) []byte {
	return sse.AppendEvent(dst, sse.Event{ID: id, Retry: primingRetry})
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

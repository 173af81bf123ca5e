package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Shared streams (design §7). With an EventLog (Redis Streams), every SSE event a session's streams carry is
// logged where every replica reads it: a client whose POST stream dropped resumes it with GET and Last-Event-ID on
// any replica, and a session's standalone stream can be read on any replica, whichever replica produced the
// message. Each replica that holds a copy of a session forwards that copy's standalone messages into the log.

// EventLog is the shared SSE event log; routing/state implements it.
type EventLog interface {
	Append(ctx context.Context, session string, stream int64, data []byte) (id string, err error)
	After(ctx context.Context, session string, stream int64, afterID string, max int) ([]state.Event, error)
	Tail(ctx context.Context, session string, stream int64, afterID string, block time.Duration) ([]state.Event, error)
	Close(ctx context.Context, session string, stream int64) error
}

const logTimeout = 2 * time.Second

// freshReplay is how far back a standalone stream opened without Last-Event-ID reads the log.
const freshReplay = 30 * time.Second

// staleStream ends a resumed stream that stays silent longer than an event log lives (routing/state keeps a
// stream's log 5 minutes after its last event).
const staleStream = 5 * time.Minute

// forwarders records the sessions whose standalone messages this replica forwards into the log.
type forwarders struct {
	mu sync.Mutex
	m  map[*routing.Session]bool
}

// shareSession starts forwarding a session's standalone messages into the shared log, once per session per
// replica; the forwarder ends with the session.
func (s *Server) shareSession(sess *routing.Session) {
	if s.opts.Events == nil {
		return
	}
	s.fwd.mu.Lock()
	if s.fwd.m == nil {
		s.fwd.m = map[*routing.Session]bool{}
	}
	started := s.fwd.m[sess]
	s.fwd.m[sess] = true
	s.fwd.mu.Unlock()
	if started {
		return
	}
	go func() { // owned by the session: ends when it does
		defer func() {
			s.fwd.mu.Lock()
			delete(s.fwd.m, sess)
			s.fwd.mu.Unlock()
		}()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { // owned by the forwarder: ends with the session or the forwarder
			select {
			case <-sess.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		for {
			// While the log is down, leave the messages in the local stream: a GET served here reads them there
			// (getShared), so a held session keeps being served during an outage.
			for s.logIsDown() {
				t := time.NewTimer(250 * time.Millisecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			msg, _, ok := sess.Standalone().Next(ctx)
			if !ok {
				return
			}
			if _, err := s.logAppend(sess, standaloneStream, msg); err != nil {
				// Not lost: back to the local stream, where a GET served here finds it while the log is down.
				sess.Standalone().Push(msg, routing.ClassNotice)
			}
		}
	}()
}

// sharedStreamID picks a stream number unique across replicas (a session's streams are numbered by whichever
// replica serves each POST).
func sharedStreamID() int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>2) + 1
}

// respondShared writes a request's SSE stream through the shared log: every event is logged before it is
// written, with the log's id, so any replica can resume the stream. held are messages already taken from out.
// If the client goes away before the answer, the rest of the stream still goes into the log.
// It reports false, having written nothing, when the log cannot take the stream: the caller then makes the stream
// resumable on this replica alone, so that its events still carry ids.
func (s *Server) respondShared(ctx context.Context, w http.ResponseWriter, sess *routing.Session, out *routing.Stream, held [][]byte, ids [][]byte) bool {
	n := sharedStreamID()
	// The stream's first entry names who produces it and for which requests, and is never sent to a client: a
	// replica resuming the stream elsewhere can tell when the producer is gone and answer the requests with an
	// error at once, instead of keep-alives until the log expires.
	if _, err := s.logAppend(sess, n, ownerMarker(s.r.Replica(), ids)); err != nil {
		return false
	}
	sw := s.startSSE(w, sess, nil)
	if protocol.AtLeast(sess.ProtocolVersion(), protocol.V20251125) {
		if id, err := s.logAppend(sess, n, nil); err == nil {
			sw.buf = appendPriming(sw.buf[:0], id)
			_ = sw.write()
		}
	}
	write := func(msg []byte) bool {
		id, err := s.logAppend(sess, n, msg)
		if err != nil {
			id = "" // unlogged: still delivered, just not resumable
		}
		return sw.event(id, msg) == nil
	}
	for _, m := range held {
		if !write(m) {
			go s.drainToLog(sess, out, n)
			return true
		}
	}
	for {
		msg, _, ok := out.Next(ctx)
		if !ok {
			break
		}
		if !write(msg) {
			go s.drainToLog(sess, out, n)
			return true
		}
	}
	if ctx.Err() != nil && !(out.Closed() || out.Pending() == 0) {
		go s.drainToLog(sess, out, n)
		return true
	}
	s.logClose(sess, n)
	return true
}

// ownerMarker is the log entry that names a stream's producer and its requests: a 0 byte (never the start of a
// JSON-RPC message), then {"replica": URL, "ids": [...]}.
func ownerMarker(replica string, ids [][]byte) []byte {
	b := append([]byte("\x00"), `{"replica":`...)
	b = jsonrpc.AppendQuote(b, replica)
	b = append(b, `,"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, id...)
	}
	return append(b, "]}"...)
}

// streamOwner reads a stream's owner marker: its producer and the ids of its requests ("" when it has none).
func streamOwner(data []byte) (replica string, ids []json.RawMessage) {
	if len(data) == 0 || data[0] != 0 {
		return "", nil
	}
	var m struct {
		Replica string            `json:"replica"`
		IDs     []json.RawMessage `json:"ids"`
	}
	if json.Unmarshal(data[1:], &m) != nil {
		return "", nil
	}
	return m.Replica, m.IDs
}

// answerOrphans answers the requests of a resumed stream whose producer is gone, so that the client's requests end
// now with an error it can act on (send them again) instead of keep-alives until the log expires. The spec allows
// it: "The server MUST NOT send a JSON-RPC response on the GET stream, except when resuming a stream that belonged
// to an earlier request."
func answerOrphans(sw *sseWriter, ids []json.RawMessage) {
	for _, id := range ids {
		msg := jsonrpc.AppendError(nil, id, protocol.CodeInternalError, "the gateway replica that was running this request stopped before it answered; send the request again", nil)
		if sw.event("", msg) != nil {
			return
		}
	}
}

// drainToLog logs the rest of a stream whose client left, so that it can resume it anywhere; it ends with the
// stream or the session.
func (s *Server) drainToLog(sess *routing.Session, out *routing.Stream, n int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // owned by the drain: ends with the session or the drain
		select {
		case <-sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		msg, _, ok := out.Next(ctx)
		if !ok {
			break
		}
		if _, err := s.logAppend(sess, n, msg); err != nil {
			s.log.Debug("stream event not logged", "err", err)
		}
	}
	s.logClose(sess, n)
}

// errLogDown is what logAppend answers while the breaker is open.
var errLogDown = errors.New("the shared event log is unavailable")

// logBackoff is how long appends are skipped after one failed: an outage must not cost every event a timeout,
// and once the log is back, events must carry ids (and so be resumable) again within a second.
const logBackoff = time.Second

// logIsDown reports whether the breaker is open.
func (s *Server) logIsDown() bool { return time.Now().UnixNano() < s.logDownUntil.Load() }

func (s *Server) logAppend(sess *routing.Session, n int64, msg []byte) (string, error) {
	if s.logIsDown() {
		return "", errLogDown
	}
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	id, err := s.opts.Events.Append(ctx, sess.ID(), n, msg)
	if err != nil && !errors.Is(err, state.ErrClosed) {
		s.logDownUntil.Store(time.Now().Add(logBackoff).UnixNano())
	}
	return id, err
}

func (s *Server) logClose(sess *routing.Session, n int64) {
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	_ = s.opts.Events.Close(ctx, sess.ID(), n)
}

// getShared serves a GET from the shared log: the stream Last-Event-ID names (from after that event), or the
// session's standalone stream.
func (s *Server) getShared(w http.ResponseWriter, r *http.Request, sess *routing.Session) {
	stream, after := int64(standaloneStream), ""
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if n, _, ok := state.ParseEventID(last); ok {
			stream, after = n, last
		}
	}
	if after == "" {
		// A fresh standalone stream gets what was logged in the last moments (messages queued just before the
		// client opened it, as a local stream would hold them), not the whole log: older messages went to an
		// earlier stream, and a server→client request answered long ago must not be asked again. (Log
		// positions are Redis stream ids, milliseconds first.)
		since := time.Now().Add(-freshReplay).UnixMilli()
		after = state.FormatEventID(standaloneStream, strconv.FormatInt(since, 10)+"-0")
	}
	sess.StreamOpened()
	defer sess.StreamClosed()
	sw := s.startSSE(w, sess, nil)
	base, stop := context.WithCancel(r.Context())
	defer stop()
	go func() { // owned by this stream: ends with it or with the session
		select {
		case <-sess.Done():
			stop()
		case <-base.Done():
		}
	}()
	ctx := base
	if stream == standaloneStream {
		var cancel context.CancelFunc
		ctx, cancel = s.untilDrain(ctx)
		defer cancel()
	}
	// Short blocking reads: a blocked read of the log cannot be interrupted, so its length bounds how long a
	// closed stream lingers; keep-alives still go out only every KeepAlive.
	block := min(s.opts.KeepAlive, 2*time.Second)
	lastWrite, lastEvent := time.Now(), time.Now()
	var owner string
	var ownerIDs []json.RawMessage
	if stream != standaloneStream {
		fctx, fcancel := context.WithTimeout(ctx, logTimeout)
		if first, err := s.opts.Events.After(fctx, sess.ID(), stream, "", 1); err == nil && len(first) == 1 {
			owner, ownerIDs = streamOwner(first[0].Data)
		}
		fcancel()
		if s.r.ReplicaGone(ctx, owner) {
			answerOrphans(sw, ownerIDs)
			return
		}
	}
	for {
		if stream != standaloneStream && time.Since(lastEvent) > staleStream {
			return // nothing came for longer than a log lives: whoever produced this stream is gone
		}
		if stream == standaloneStream && s.logIsDown() {
			// The log is unavailable: serve this replica's copy of the session from its local stream meanwhile.
			lctx, lcancel := context.WithTimeout(ctx, block)
			msg, _, ok := sess.Standalone().Next(lctx)
			lcancel()
			if ok {
				if sw.event("", msg) != nil {
					return
				}
				lastWrite = time.Now()
			} else if ctx.Err() != nil {
				s.retryHint(sw)
				return
			}
			continue
		}
		// A deadline on every read: with Redis down, a read without one can wait out the client's reconnection
		// attempts instead of failing fast.
		tctx, tcancel := context.WithTimeout(ctx, block+logTimeout)
		events, err := s.opts.Events.Tail(tctx, sess.ID(), stream, after, block)
		tcancel()
		for _, e := range events {
			after = e.ID
			if len(e.Data) == 0 || e.Data[0] == 0 {
				continue // a priming event or the owner marker: nothing to deliver
			}
			if sw.event(e.ID, e.Data) != nil {
				return
			}
			lastWrite, lastEvent = time.Now(), time.Now()
		}
		switch {
		case errors.Is(err, state.ErrClosed):
			return // the stream is complete
		case ctx.Err() != nil:
			s.retryHint(sw)
			return
		case err != nil:
			s.log.Debug("shared stream read failed", "err", err)
			s.logDownUntil.Store(time.Now().Add(logBackoff).UnixNano())
			if sw.comment("keep-alive") != nil {
				return
			}
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		case len(events) == 0 && s.r.ReplicaGone(ctx, owner):
			answerOrphans(sw, ownerIDs)
			return
		case len(events) == 0 && time.Since(lastWrite) >= s.opts.KeepAlive:
			if sw.comment("keep-alive") != nil {
				return
			}
			lastWrite = time.Now()
			sess.StreamOpened() // touch: a client that listens is not idle, here or in the shared record
			sess.StreamClosed()
		}
	}
}

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
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

// claimCheck is how often a connection that writes a stream from its source looks in the log for a takeover.
const claimCheck = 500 * time.Millisecond

// sharedLog is one stream of the shared event log as one connection sees it; its ids are the log's,
// "<stream>_<ms>-<seq>" (state.FormatEventID).
//
// Claims across replicas. The spec has each message go out on one connection only: "The server MUST send each
// of its JSON-RPC messages on only one of the connected streams; that is, it MUST NOT broadcast the same message
// across multiple streams", and a client resumes a stream, any stream, with "an HTTP GET to the MCP endpoint"
// and Last-Event-ID ("Resumability and Redelivery", 2025-11-25). A claim is therefore made in the log itself, so
// that every replica sees it in the same order: the claiming connection appends a claim marker (never
// delivered) naming a random token and a lease. The holder is the connection of the first claim in log order
// whose lease is live and which no release follows, except that a takeover claim (a resumption with
// Last-Event-ID of a POST stream) supersedes every claim before it. A connection appends its claim, then reads
// the markers of the last lease: if it is not the holder it releases its claim and is refused (409), so two
// racing claims, on any replicas, agree on who won. A holder renews its claim while it writes and releases it
// when it ends; a replica that dies leaves a claim that lapses with its lease (2 keep-alive intervals and a
// little), so a standalone stream held there is refused until then. A superseded holder learns of the takeover
// from the log: a connection following the log at its next read, one writing from its source within claimCheck
// (it logs what it takes, for the new holder, but writes no more). While the log is unavailable no claim can be
// made and the stream is served unclaimed, as this replica's fallback.
type sharedLog struct {
	hub  *streamHub
	sess session
	n    int64

	// The producer's marker, read on the first Read of a POST stream.
	ownerRead bool
	owner     string
	ownerIDs  []json.RawMessage
	lastEvent time.Time // of the last event followed, for staleStream

	// The claim.
	token     string // "" while unclaimed
	holder    string // the token holding the stream, as far as the markers read tell
	holderEnd int64  // its lease's end (unix ms)
	seen      string // the id up to which markers were read
	lastLook  time.Time
	renewed   time.Time
}

// markerPrefix starts every log entry that is not a message: a 0 byte, never the start of a JSON-RPC message.
const markerPrefix = 0

// marker is a log entry that is not delivered: the owner marker (Replica, IDs), a claim (Claim, Until,
// Takeover) or a release (Release).
type marker struct {
	Replica  string            `json:"replica,omitempty"`
	IDs      []json.RawMessage `json:"ids,omitempty"`
	Claim    string            `json:"claim,omitempty"`
	Until    int64             `json:"until,omitempty"`
	Takeover bool              `json:"takeover,omitempty"`
	Release  string            `json:"release,omitempty"`
}

func encodeMarker(m marker) []byte {
	b, _ := json.Marshal(m)
	return append([]byte{markerPrefix}, b...)
}

func decodeMarker(data []byte) (marker, bool) {
	var m marker
	if len(data) == 0 || data[0] != markerPrefix || json.Unmarshal(data[1:], &m) != nil {
		return marker{}, false
	}
	return m, true
}

// sharedStreamID picks a stream number unique across replicas (a session's streams are numbered by whichever
// replica serves each POST).
func sharedStreamID() int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>2) + 1
}

// newSharedStream starts a request's stream in the shared log, or returns nil when the log cannot take it (the
// caller then makes the stream resumable on this replica alone, so that its events still carry ids). The
// stream's first entry names who produces it and for which requests, and is never sent to a client: a replica
// resuming the stream elsewhere can tell when the producer is gone and answer the requests with an error at once,
// instead of keep-alives until the log expires.
func (h *streamHub) newSharedStream(sess session, ids [][]byte) *sharedLog {
	// The marker is also the stream's first claim, by the connection that starts it: nobody else can hold a
	// stream that did not exist.
	lg := &sharedLog{hub: h, sess: sess, n: sharedStreamID(), token: rand.Text(), renewed: time.Now()}
	lg.holder, lg.holderEnd = lg.token, lg.renewed.Add(lg.lease()).UnixMilli()
	id, err := h.logAppend(sess, lg.n, ownerMarker(h.peers.Replica(), ids, lg.token, lg.holderEnd))
	if err != nil {
		return nil
	}
	lg.seen, lg.lastLook = id, time.Now()
	return lg
}

// sharedStreamFor is the stream of the shared log a GET reads, and where it starts: the stream Last-Event-ID
// names (from after that event), or the session's standalone stream.
func (h *streamHub) sharedStreamFor(sess session, lastEventID string) (*sharedLog, string) {
	if n, _, ok := state.ParseEventID(lastEventID); ok {
		return &sharedLog{hub: h, sess: sess, n: n}, lastEventID
	}
	// A fresh standalone stream gets what was logged in the last moments (messages queued just before the
	// client opened it, as a local stream would hold them), not the whole log: older messages went to an
	// earlier stream, and a server→client request answered long ago must not be asked again. (Log positions
	// are Redis stream ids, milliseconds first.)
	return &sharedLog{hub: h, sess: sess, n: standaloneStream}, sinceID(standaloneStream, time.Now().Add(-freshReplay))
}

// sinceID is an event id of stream just before anything logged at t.
func sinceID(stream int64, t time.Time) string {
	return state.FormatEventID(stream, strconv.FormatInt(max(t.UnixMilli(), 0), 10)+"-0")
}

func (lg *sharedLog) stream() int64 { return lg.n }

// Append implements streamLog.
func (lg *sharedLog) Append(_ context.Context, data []byte) (string, error) {
	return lg.hub.logAppend(lg.sess, lg.n, data)
}

// lease is how long a claim stands unless renewed.
func (lg *sharedLog) lease() time.Duration { return 2*lg.hub.keepAlive + 2*logTimeout }

// Claim implements streamLog.
func (lg *sharedLog) Claim(ctx context.Context, takeover bool, _ context.CancelFunc) error {
	if lg.token != "" {
		return nil // claimed when the stream started
	}
	token := rand.Text()
	now := time.Now()
	if _, err := lg.hub.logAppend(lg.sess, lg.n, encodeMarker(marker{Claim: token, Until: now.Add(lg.lease()).UnixMilli(), Takeover: takeover})); err != nil {
		return nil // the log is unavailable: served unclaimed meanwhile
	}
	lg.token, lg.renewed = token, now
	// The markers of the last lease decide; older claims have lapsed.
	rctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	events, err := lg.hub.events.After(rctx, lg.sess.ID(), lg.n, sinceID(lg.n, now.Add(-lg.lease()-logTimeout)), 0)
	if err != nil {
		return nil // cannot tell: served as claimed
	}
	lg.markers(events)
	if lg.holder != token {
		lg.release()
		return errStreamHeld
	}
	return nil
}

// markers follows the claims among events, which come in log order after those already seen.
func (lg *sharedLog) markers(events []state.Event) {
	now := time.Now().UnixMilli()
	for _, e := range events {
		lg.seen = e.ID
		m, ok := decodeMarker(e.Data)
		switch {
		case !ok:
		case m.Release != "" && m.Release == lg.holder:
			lg.holder = ""
		case m.Claim == "":
		case m.Claim == lg.holder:
			lg.holderEnd = m.Until
		case m.Takeover || lg.holder == "" || lg.holderEnd <= now:
			lg.holder, lg.holderEnd = m.Claim, m.Until
		}
	}
	lg.lastLook = time.Now()
}

// Held implements streamLog: it renews the claim, and reads the markers logged since it last looked.
func (lg *sharedLog) Held(ctx context.Context) bool {
	if lg.token == "" {
		return true // unclaimed: the log was down
	}
	if time.Since(lg.renewed) >= lg.hub.keepAlive/2 {
		lg.renewed = time.Now()
		_, _ = lg.hub.logAppend(lg.sess, lg.n, encodeMarker(marker{Claim: lg.token, Until: lg.renewed.Add(lg.lease()).UnixMilli()}))
	}
	if time.Since(lg.lastLook) >= claimCheck && lg.seen != "" {
		rctx, cancel := context.WithTimeout(ctx, logTimeout)
		events, err := lg.hub.events.After(rctx, lg.sess.ID(), lg.n, lg.seen, 0)
		cancel()
		if err == nil {
			lg.markers(events)
		}
	}
	return lg.holder == lg.token || lg.holder == ""
}

// Release implements streamLog: a complete stream is closed in the log; the rest of one the connection left is
// logged in the background, so that the client can resume it anywhere.
func (lg *sharedLog) Release(src *routing.Stream, complete bool) {
	lg.release()
	switch {
	case src == nil:
	case complete:
		lg.hub.logClose(lg.sess, lg.n)
	default:
		sess, n := lg.sess, lg.n
		if !lg.hub.streams.of(sess).goWork(func(ctx context.Context) { lg.hub.drainToLog(ctx, sess, src, n) }) {
			lg.hub.logClose(sess, n)
		}
	}
}

func (lg *sharedLog) release() {
	if lg.token != "" {
		_, _ = lg.hub.logAppend(lg.sess, lg.n, encodeMarker(marker{Release: lg.token}))
		lg.token = ""
	}
}

// Read implements streamLog. While the log is unavailable, a standalone stream is read from this replica's copy
// of the session instead, so that a held session keeps being served during an outage.
func (lg *sharedLog) Read(ctx context.Context, after string, wait time.Duration) ([]state.Event, string, error) {
	if lg.n == standaloneStream && lg.hub.logIsDown() {
		return lg.readLocal(ctx, after, wait)
	}
	if lg.n != standaloneStream && !lg.ownerRead {
		lg.ownerRead, lg.lastEvent = true, time.Now()
		fctx, cancel := context.WithTimeout(ctx, logTimeout)
		if first, err := lg.hub.events.After(fctx, lg.sess.ID(), lg.n, "", 1); err == nil && len(first) == 1 {
			lg.owner, lg.ownerIDs = streamOwner(first[0].Data)
		}
		cancel()
		if lg.hub.peers.ReplicaGone(ctx, lg.owner) {
			return nil, after, &orphanedError{ids: lg.ownerIDs}
		}
	}
	if lg.n != standaloneStream && wait > 0 && time.Since(lg.lastEvent) > staleStream {
		return nil, after, errStale // nothing came for longer than a log lives: whoever produced it is gone
	}
	var events []state.Event
	var err error
	if wait > 0 {
		// A deadline on every read: with Redis down, a read without one can wait out the client's reconnection
		// attempts instead of failing fast.
		tctx, cancel := context.WithTimeout(ctx, wait+logTimeout)
		events, err = lg.hub.events.Tail(tctx, lg.sess.ID(), lg.n, after, wait)
		cancel()
	} else {
		rctx, cancel := context.WithTimeout(ctx, logTimeout)
		events, err = lg.hub.events.After(rctx, lg.sess.ID(), lg.n, after, 0)
		cancel()
	}
	switch {
	case errors.Is(err, state.ErrClosed):
		return nil, after, errStreamDone
	case err != nil && ctx.Err() == nil:
		lg.hub.logDownUntil.Store(time.Now().Add(logBackoff).UnixNano())
		return nil, after, err
	case err != nil:
		return nil, after, err
	}
	return lg.deliverable(ctx, events, after, wait)
}

// deliverable keeps the messages among events, following the claims among the rest.
func (lg *sharedLog) deliverable(ctx context.Context, events []state.Event, after string, wait time.Duration) ([]state.Event, string, error) {
	next := after
	if len(events) > 0 {
		next = events[len(events)-1].ID
	}
	if lg.token != "" {
		lg.markers(events)
	}
	out := events[:0]
	for _, e := range events {
		if len(e.Data) > 0 && e.Data[0] != markerPrefix {
			out = append(out, e) // not a priming event nor a marker
		}
	}
	switch {
	case lg.token != "" && lg.holder != "" && lg.holder != lg.token:
		return nil, next, errTakenOver // the new holder writes them
	case len(out) > 0:
		lg.lastEvent = time.Now()
	case wait > 0 && len(events) == 0 && lg.hub.peers.ReplicaGone(ctx, lg.owner):
		return nil, next, &orphanedError{ids: lg.ownerIDs}
	}
	return out, next, nil
}

// readLocal reads the session's standalone messages from this replica's copy (they carry no id).
func (lg *sharedLog) readLocal(ctx context.Context, after string, wait time.Duration) ([]state.Event, string, error) {
	if wait <= 0 {
		return nil, after, nil
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	msg, _, ok := lg.sess.Standalone().Next(lctx)
	if !ok {
		return nil, after, nil
	}
	return []state.Event{{Data: msg}}, after, nil
}

// orphanedError: the producer of a resumed stream is gone, leaving its requests unanswered.
type orphanedError struct{ ids []json.RawMessage }

func (e *orphanedError) Error() string {
	return "the gateway replica producing this stream is gone"
}

// ownerMarker is the log entry that names a stream's producer and its requests, and claims the stream for the
// producer's connection: a 0 byte (never the start of a JSON-RPC message), then
// {"replica": URL, "ids": [...], "claim": token, "until": unix ms}.
func ownerMarker(replica string, ids [][]byte, claim string, until int64) []byte {
	b := append([]byte{markerPrefix}, `{"replica":`...)
	b = jsonrpc.AppendQuote(b, replica)
	b = append(b, `,"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, id...)
	}
	b = append(b, `],"claim":`...)
	b = jsonrpc.AppendQuote(b, claim)
	b = append(b, `,"until":`...)
	b = strconv.AppendInt(b, until, 10)
	return append(b, '}')
}

// streamOwner reads a stream's owner marker: its producer and the ids of its requests ("" when it has none).
func streamOwner(data []byte) (replica string, ids []json.RawMessage) {
	m, ok := decodeMarker(data)
	if !ok {
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
// stream or the session (ctx).
func (h *streamHub) drainToLog(ctx context.Context, sess session, out *routing.Stream, n int64) {
	for {
		msg, _, ok := out.Next(ctx)
		if !ok {
			break
		}
		if _, err := h.logAppend(sess, n, msg); err != nil {
			h.log.Debug("stream event not logged", "err", err)
		}
	}
	h.logClose(sess, n)
}

// forwarders records the sessions whose standalone messages this replica forwards into the log.
type forwarders struct {
	mu sync.Mutex
	m  map[session]bool
}

// shareSession starts forwarding a session's standalone messages into the shared log, once per session per
// replica; the forwarder is a worker of the session's streams, which wait for it when the session ends.
func (h *streamHub) shareSession(sess session) {
	if h.events == nil {
		return
	}
	h.fwd.mu.Lock()
	if h.fwd.m == nil {
		h.fwd.m = map[session]bool{}
	}
	started := h.fwd.m[sess]
	h.fwd.m[sess] = true
	h.fwd.mu.Unlock()
	if started {
		return
	}
	forget := func() {
		h.fwd.mu.Lock()
		delete(h.fwd.m, sess)
		h.fwd.mu.Unlock()
	}
	if !h.streams.of(sess).goWork(func(ctx context.Context) { defer forget(); h.forward(ctx, sess) }) {
		forget()
	}
}

// forward moves a session's standalone messages into the shared log until ctx ends.
func (h *streamHub) forward(ctx context.Context, sess session) {
	for {
		// While the log is down, leave the messages in the local stream: a GET served here reads them there
		// (sharedLog.Read), so a held session keeps being served during an outage.
		for h.logIsDown() {
			if sleepCtx(ctx, 250*time.Millisecond) != nil {
				return
			}
		}
		msg, _, ok := sess.Standalone().Next(ctx)
		if !ok {
			return
		}
		if _, err := h.logAppend(sess, standaloneStream, msg); err != nil {
			// Not lost: back to the local stream, where a GET served here finds it while the log is down.
			sess.Standalone().Push(msg, routing.ClassNotice)
		}
	}
}

// errLogDown is what logAppend answers while the breaker is open.
var errLogDown = errors.New("the shared event log is unavailable")

// logBackoff is how long appends are skipped after one failed: an outage must not cost every event a timeout,
// and once the log is back, events must carry ids (and so be resumable) again within a second.
const logBackoff = time.Second

// logIsDown reports whether the breaker is open.
func (h *streamHub) logIsDown() bool { return time.Now().UnixNano() < h.logDownUntil.Load() }

func (h *streamHub) logAppend(sess session, n int64, msg []byte) (string, error) {
	if h.logIsDown() {
		return "", errLogDown
	}
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	id, err := h.events.Append(ctx, sess.ID(), n, msg)
	if err != nil && !errors.Is(err, state.ErrClosed) {
		h.logDownUntil.Store(time.Now().Add(logBackoff).UnixNano())
	}
	if err != nil {
		return "", fmt.Errorf("logging an event of stream %d: %w", n, err)
	}
	return id, nil
}

func (h *streamHub) logClose(sess session, n int64) {
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	_ = h.events.Close(ctx, sess.ID(), n)
}

var (
	_ EventLog = (*state.Memory)(nil)
	_ EventLog = (*state.Redis)(nil)
)

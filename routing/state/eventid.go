package state

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event ids are "<stream>_<ms>-<seq>": the SSE stream's number, an underscore, and the event's position in that
// stream's log, which is a Redis stream entry id (milliseconds, a dash, a sequence number within the
// millisecond). Memory mints positions of the same form. Example: "3_1700000000000-0". The gateway reads the stream
// number back from a client's Last-Event-ID with ParseEventID to know which stream to resume, then passes the
// whole id to After.

// position is an event's place in its stream's log.
type position struct{ ms, seq uint64 }

func (p position) String() string {
	return strconv.FormatUint(p.ms, 10) + "-" + strconv.FormatUint(p.seq, 10)
}

func (p position) less(q position) bool { return p.ms < q.ms || p.ms == q.ms && p.seq < q.seq }

// next is the smallest position after p (an exclusive lower bound for XRANGE).
func (p position) next() position {
	if p.seq == ^uint64(0) {
		return position{ms: p.ms + 1}
	}
	return position{ms: p.ms, seq: p.seq + 1}
}

func parsePosition(s string) (position, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return position{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return position{ms, seq}, err1 == nil && err2 == nil
}

// FormatEventID makes the SSE id of the event at pos (a Redis stream entry id, "<ms>-<seq>") in stream.
func FormatEventID(stream int64, pos string) string {
	return strconv.FormatInt(stream, 10) + "_" + pos
}

// ParseEventID reads an id made by FormatEventID: the stream number and the position in that stream's log.
func ParseEventID(id string) (stream int64, pos string, ok bool) {
	a, b, found := strings.Cut(id, "_")
	if !found {
		return 0, "", false
	}
	stream, err := strconv.ParseInt(a, 10, 64)
	if err != nil || stream < 0 {
		return 0, "", false
	}
	if _, ok := parsePosition(b); !ok {
		return 0, "", false
	}
	return stream, b, true
}

// afterPosition checks that afterID ("" for the start) names a position of stream and returns it; from is false
// for "".
func afterPosition(stream int64, afterID string) (p position, from bool, err error) {
	if afterID == "" {
		return position{}, false, nil
	}
	s, pos, ok := ParseEventID(afterID)
	if !ok || s != stream {
		return position{}, false, fmt.Errorf("%w: event id %q is not of stream %d", ErrInvalid, afterID, stream)
	}
	p, _ = parsePosition(pos)
	return p, true, nil
}

func checkStream(session string, stream int64) error {
	if err := checkID("session id", session); err != nil {
		return err
	}
	if stream < 0 {
		return fmt.Errorf("%w: stream %d", ErrInvalid, stream)
	}
	return nil
}

// maxIDLen bounds ids and keys given to the store: they come from clients.
const maxIDLen = 512

func checkID(what, id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%w: %s of length %d", ErrInvalid, what, len(id))
	}
	return nil
}

// deadlineMargin is kept between the end of a Tail's wait and its context's deadline, so that the wait ends
// (with nil, nil) before the context does.
const deadlineMargin = 100 * time.Millisecond

// tailWait is how long Tail may wait: block, cut short by ctx's deadline; <= 0 means not at all.
func tailWait(ctx context.Context, block time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		block = min(block, time.Until(dl)-deadlineMargin)
	}
	return block
}

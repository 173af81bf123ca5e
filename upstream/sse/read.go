package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrTooLarge is wrapped by the error Reader.Next returns when one event
// exceeds the size limit.
var ErrTooLarge = errors.New("sse: event too large")

// DefaultMaxEventBytes is the event size limit used when NewReader is given
// a non-positive limit.
const DefaultMaxEventBytes = 4 << 20

const initialBufSize = 4096

// Reader decodes an event stream per the WHATWG spec: fields id, event,
// data and retry; comment lines (starting with ':') ignored; multi-line data
// joined with '\n'; CRLF, CR or LF line endings; one leading UTF-8 BOM
// skipped. Field values are passed through as bytes without UTF-8
// validation (the spec decodes with replacement; JSON consumers validate
// anyway). It is not safe for concurrent use.
type Reader struct {
	src io.Reader
	max int

	buf      []byte // buf[start:end] is read but unconsumed
	start    int
	end      int
	readErr  error // from src, returned once buffered lines are consumed
	err      error // sticky error from Next
	skipLF   bool  // the previous line ended in CR; a following LF belongs to it
	firstRun bool  // the BOM check is still pending

	// Per-event state, reset at each blank line.
	size    int // bytes of field lines in this event, excluding terminators
	data    []byte
	hasData bool
	name    []byte
	hasID   bool
	retry   time.Duration

	// Stream state.
	idBuf     string        // the spec's "last event ID buffer"
	lastID    string        // committed from idBuf at each blank line
	lastName  string        // cache so a repeated event name is not reallocated
	lastRetry time.Duration // most recent valid retry field
}

// NewReader returns a Reader that reads from r and fails with ErrTooLarge on
// an event whose field lines add up to more than maxEventBytes bytes (line
// terminators not counted). maxEventBytes <= 0 means DefaultMaxEventBytes.
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return &Reader{src: r, max: maxEventBytes, firstRun: true}
}

// LastEventID returns the last event ID of the stream, which a client sends
// as Last-Event-ID when it reconnects. Per the spec an id takes effect at the
// blank line that ends its block, so an id in an unterminated block at the
// end of the stream does not count.
func (r *Reader) LastEventID() string { return r.lastID }

// Retry returns the most recent reconnection delay set by a retry field,
// including one in a block that dispatched no event, or 0 if none.
func (r *Reader) Retry() time.Duration { return r.lastRetry }

// Next returns the next event. Blocks with neither data nor an id field are
// skipped, as the spec requires for blocks without data, except that an
// event with an id field and no data (a "priming" event) is returned with
// HasID set and empty Data. At the end of the stream Next returns io.EOF; an
// unterminated final event is discarded per the spec. Errors from the
// underlying reader are returned as is; an oversized event yields an error
// wrapping ErrTooLarge. After any error, Next keeps returning it, because
// the stream position is then unreliable.
//
// The returned Data is a fresh slice that the caller owns.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.line()
		if err != nil {
			r.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		r.size += len(line)
		if r.size > r.max {
			r.err = fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.max)
			return Event{}, r.err
		}
		r.field(line)
	}
}

// field processes one non-empty line.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "event":
		r.name = append(r.name[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) >= 0 {
			return // the spec ignores ids containing NUL
		}
		r.hasID = true
		if string(value) != r.idBuf {
			r.idBuf = string(value)
		}
	case "retry":
		if ms, ok := parseDigits(value); ok {
			r.retry = time.Duration(ms) * time.Millisecond
			r.lastRetry = r.retry
		}
	}
}

// parseDigits parses a non-empty all-ASCII-digit value; values too large
// for a time.Duration in milliseconds are rejected.
func parseDigits(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	const limit = int64(1<<63-1) / int64(time.Millisecond)
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	return n, true
}

// dispatch ends the current block and reports whether it forms an event.
func (r *Reader) dispatch() (Event, bool) {
	defer r.reset()
	r.lastID = r.idBuf // committed even when no event is dispatched
	if !r.hasData && !r.hasID {
		return Event{}, false
	}
	ev := Event{ID: r.lastID, Retry: r.retry, HasID: r.hasID}
	if len(r.name) > 0 {
		if string(r.name) != r.lastName {
			r.lastName = string(r.name)
		}
		ev.Name = r.lastName
	}
	data := r.data
	if len(data) > 0 {
		data = data[:len(data)-1] // the spec drops the final LF
	}
	ev.Data = append([]byte{}, data...)
	return ev, true
}

func (r *Reader) reset() {
	r.size = 0
	r.data = r.data[:0]
	r.hasData = false
	r.name = r.name[:0]
	r.hasID = false
	r.retry = 0
}

// line returns the next line without its terminator. It aliases the
// internal buffer until the next call.
func (r *Reader) line() ([]byte, error) {
	for {
		if r.skipLF && r.start < r.end {
			if r.buf[r.start] == '\n' {
				r.start++
			}
			r.skipLF = false
		}
		if r.firstRun && (r.end-r.start >= 3 || r.readErr != nil) {
			r.firstRun = false
			if bytes.HasPrefix(r.buf[r.start:r.end], []byte("\xEF\xBB\xBF")) {
				r.start += 3
			}
		}
		if !r.firstRun {
			seg := r.buf[r.start:r.end]
			if i := indexEOL(seg); i >= 0 {
				r.skipLF = seg[i] == '\r'
				r.start += i + 1
				return seg[:i], nil
			}
			// No complete line buffered: a line that cannot fit in the
			// event any more fails now rather than after buffering it all.
			if r.size+len(seg) > r.max {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.max)
			}
		}
		if r.readErr != nil {
			if r.readErr == io.EOF {
				return nil, io.EOF
			}
			return nil, r.readErr
		}
		r.fill()
	}
}

// fill reads more input, compacting or growing the buffer as needed.
func (r *Reader) fill() {
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		n := 2 * len(r.buf)
		if n == 0 {
			n = min(initialBufSize, r.max+4)
		}
		// The largest line that can still be accepted plus its terminator
		// and a possible BOM bounds the buffer.
		n = max(min(n, r.max+4), r.end+1)
		nb := make([]byte, n)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	n, err := r.src.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.readErr = err
	}
}

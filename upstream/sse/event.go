package sse

import "time"

// Event is one SSE event.
type Event struct {
	// ID is the last event ID in effect when the event was dispatched. Per
	// the spec it persists across events until another id field changes it,
	// so it may be set even when HasID is false.
	ID string
	// Name is the "event:" field; "" means the default type "message".
	Name string
	// Data is the payload; multiple data lines are joined with '\n'.
	Data []byte
	// Retry is the reconnection delay from a "retry:" field in this event,
	// or 0 if none.
	Retry time.Duration
	// HasID reports that this event carried an id field, possibly empty (an
	// empty id resets the last event ID).
	HasID bool
}

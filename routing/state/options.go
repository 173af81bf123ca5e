package state

import "time"

// Defaults of the options.
const (
	// DefaultSessionTTL matches routing's default session idle timeout.
	DefaultSessionTTL = 30 * time.Minute
	// DefaultEventLogLen matches the gateway's in-process replay log (256 events a stream).
	DefaultEventLogLen = 256
	// DefaultEventLogTTL is how long a stream's log outlives its last event or its Close.
	DefaultEventLogTTL = 5 * time.Minute
	// DefaultBusBuffer is the capacity of a subscription's channel.
	DefaultBusBuffer = 256
	// DefaultPrefix starts every Redis key and channel.
	DefaultPrefix = "switchboard:"
)

// Option configures NewMemory and NewRedis.
type Option func(*options)

type options struct {
	sessionTTL  time.Duration
	eventMaxLen int
	eventTTL    time.Duration
	busBuffer   int
	maxPins     int // MaxPins; smaller in tests
}

func buildOptions(opts []Option) options {
	o := options{
		sessionTTL:  DefaultSessionTTL,
		eventMaxLen: DefaultEventLogLen,
		eventTTL:    DefaultEventLogTTL,
		busBuffer:   DefaultBusBuffer,
		maxPins:     MaxPins,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithSessionTTL sets how long a session record lives after it was last created, updated or touched: the
// session idle timeout. Values <= 0 keep the default.
func WithSessionTTL(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.sessionTTL = d
		}
	}
}

// WithEventLog bounds every stream's event log to about maxLen events, kept ttl after the last Append or Close.
// Values <= 0 keep the defaults.
func WithEventLog(maxLen int, ttl time.Duration) Option {
	return func(o *options) {
		if maxLen > 0 {
			o.eventMaxLen = maxLen
		}
		if ttl > 0 {
			o.eventTTL = ttl
		}
	}
}

// WithBusBuffer sets the capacity of each subscription's channel. Values <= 0 keep the default.
func WithBusBuffer(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.busBuffer = n
		}
	}
}

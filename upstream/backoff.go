package upstream

import (
	"math/rand/v2"
	"time"
)

const (
	defaultBackoffMin = 250 * time.Millisecond
	defaultBackoffMax = 30 * time.Second
)

// Backoff computes capped exponential reconnect delays with jitter. Jitter
// keeps many gateway replicas (or many sessions) from reconnecting to a
// recovering upstream in lockstep.
type Backoff struct {
	// Min is the base delay of the first attempt; zero means 250ms.
	Min time.Duration
	// Max caps every delay; zero means 30s. A Max below Min is raised to Min.
	Max time.Duration
}

// Delay returns the delay before reconnect attempt number attempt (0 for the
// first). The result lies in [max(Min, b/2), b] where b = min(Min·2^attempt,
// Max), so it always lies within [Min, Max].
func (b Backoff) Delay(attempt int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = defaultBackoffMin
	}
	if hi <= 0 {
		hi = defaultBackoffMax
	}
	if hi < lo {
		hi = lo
	}
	base := lo
	for i := 0; i < attempt && base < hi; i++ {
		if base > hi/2 { // doubling would pass hi (or overflow)
			base = hi
			break
		}
		base *= 2
	}
	// "Equal jitter": half fixed, half random.
	d := base/2 + rand.N(base/2+1)
	return max(d, lo)
}

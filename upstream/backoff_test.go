package upstream

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		b       Backoff
		attempt int
		lo, hi  time.Duration
	}{
		{"defaults first", Backoff{}, 0, 250 * ms, 250 * ms},
		{"defaults second", Backoff{}, 1, 250 * ms, 500 * ms},
		{"defaults third", Backoff{}, 2, 500 * ms, 1000 * ms},
		{"defaults capped", Backoff{}, 20, 15 * time.Second, 30 * time.Second},
		{"huge attempt", Backoff{}, 1 << 30, 15 * time.Second, 30 * time.Second},
		{"negative attempt", Backoff{}, -3, 250 * ms, 250 * ms},
		{"custom", Backoff{Min: 10 * ms, Max: 100 * ms}, 3, 40 * ms, 80 * ms},
		{"custom capped", Backoff{Min: 10 * ms, Max: 100 * ms}, 10, 50 * ms, 100 * ms},
		{"max below min", Backoff{Min: time.Second, Max: ms}, 5, time.Second, time.Second},
		{"huge max", Backoff{Min: time.Nanosecond, Max: 1<<63 - 1}, 100, (1<<63 - 1) / 2, 1<<63 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 200 { // jitter: many draws must all stay in bounds
				if d := tt.b.Delay(tt.attempt); d < tt.lo || d > tt.hi {
					t.Fatalf("Delay(%d) = %v, want within [%v, %v]", tt.attempt, d, tt.lo, tt.hi)
				}
			}
		})
	}
}

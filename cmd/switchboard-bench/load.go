package main

// The closed-loop load generator.

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// loadResult is one target at one concurrency.
type loadResult struct {
	target  string
	clients int
	dur     time.Duration
	calls   int             // completed within the measured window
	errs    int             // in the whole run, handshakes included
	errMsgs []string        // the first few
	lat     []time.Duration // sorted, calls of the measured window
	// The process in the middle (gateway or proxy; nil for direct) and the upstream, over the measured window.
	midCPU, upCPU float64
	midPeakKiB    int64
	hasMid        bool
}

func (r loadResult) throughput() float64 { return float64(r.calls) / r.dur.Seconds() }

func (r loadResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(p*float64(len(r.lat))+0.5) - 1
	i = max(0, min(i, len(r.lat)-1))
	return r.lat[i]
}

func (r loadResult) max() time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[len(r.lat)-1]
}

// errorSink counts errors and keeps the first few messages.
type errorSink struct {
	mu   sync.Mutex
	n    int
	msgs []string
}

func (e *errorSink) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.msgs) < 5 {
		e.msgs = append(e.msgs, err.Error())
	}
}

// connectAll opens n sessions at url, at most 32 handshakes at a time.
func connectAll(hc *http.Client, url string, n int, errs *errorSink) []*mcpClient {
	cs := make([]*mcpClient, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := &mcpClient{hc: hc, url: url}
			if err := c.initialize(); err != nil {
				errs.add(fmt.Errorf("handshake: %w", err))
				return
			}
			cs[i] = c
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(cs, func(c *mcpClient) bool { return c == nil })
}

// runLoad has n clients call a tool (params is the tools/call params) in a closed loop: warm-up, then dur of
// measurement. mid and up are sampled over the measured window (either may be nil).
func runLoad(target, url, params string, n int, warm, dur time.Duration, mid, up *child) loadResult {
	res := loadResult{target: target, clients: n, dur: dur, hasMid: mid != nil}
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	var errs errorSink
	if mid != nil {
		resetPeak(mid.pid())
	}
	cs := connectAll(hc, url, n, &errs)

	start := time.Now()
	from, end := start.Add(warm), start.Add(warm+dur)
	var midA, midB, upA, upB procSample
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		time.Sleep(time.Until(from))
		if mid != nil {
			midA = sample(mid.pid())
		}
		if up != nil {
			upA = sample(up.pid())
		}
		time.Sleep(time.Until(end))
		if mid != nil {
			midB = sample(mid.pid())
		}
		if up != nil {
			upB = sample(up.pid())
		}
	}()

	lats := make([][]time.Duration, len(cs))
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 4096)
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				err := c.callTool(params)
				t1 := time.Now()
				if err != nil {
					errs.add(err)
					time.Sleep(10 * time.Millisecond) // a failing target must not turn into a busy loop
					continue
				}
				if !t0.Before(from) && !t1.After(end) {
					mine = append(mine, t1.Sub(t0))
				}
			}
			lats[i] = mine
			calls.Add(int64(len(mine)))
		}()
	}
	wg.Wait()
	sampled.Wait()
	for _, c := range cs {
		c.close()
	}
	all := make([]time.Duration, 0, calls.Load())
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	res.lat, res.calls = all, len(all)
	res.errs, res.errMsgs = errs.n, errs.msgs
	if mid != nil {
		res.midCPU = midB.cpu - midA.cpu
		res.midPeakKiB = midB.hwm
	}
	if up != nil {
		res.upCPU = upB.cpu - upA.cpu
	}
	return res
}

package main

// The closed-loop load generator.

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The targets, by the names the report's tables give them (and results are keyed by, with the clients).
const (
	directName    = "direct"
	proxyName     = "proxy"
	perClientName = "switchboard per-client"
	sharedName    = "switchboard shared"
	bareName      = "bare gateway per-client"

	gwName  = "switchboard, shared stdio"
	gwlName = "switchboard, shared stdio, protocol: legacy"
	gwmName = "switchboard, shared stdio, protocol: modern"
	brName  = "simple bridge, one stdio child"
)

// peerStdioName is the stdio scenario's name for the peer labelled label.
func peerStdioName(label string) string { return label + ", one stdio child" }

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
	hasMid, hasUp bool
	// dials is the number of TCP connections the upstream accepted in the measured window, when hasDials.
	dials    int64
	hasDials bool
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

// meter is a counter of another process read at both ends of the measured window (the upstream's accepted
// connections, redis-server's INFO), so that it covers exactly the calls that are counted.
type meter interface {
	begin()
	end()
}

// loadSpec is one closed-loop run (its run method).
type loadSpec struct {
	target, url, params string // params: of tools/call
	clients             int
	warm, dur           time.Duration
	// mids are the processes between client and upstream (the proxy, the gateway, or every gateway replica): their
	// CPU and peak RSS are summed. ups are the upstream processes. Either may be empty.
	mids, ups []int
	meters    []meter
	// openMeters are read before the clients' handshakes and after them; closeMeters before and after the
	// sessions are ended (DELETE). Both are outside the measured window.
	openMeters, closeMeters []meter
}

// sampleAll sums the CPU, RSS and peak RSS of several processes (a process that is gone counts nothing).
func sampleAll(pids []int) procSample {
	var t procSample
	for _, p := range pids {
		s := sample(p)
		t.cpu += s.cpu
		t.rss += s.rss
		t.hwm += s.hwm
	}
	return t
}

// run has s.clients clients call the tool in a closed loop: s.warm of warm-up, then s.dur measured; the processes
// and meters are read at both ends of the measured window.
func (s loadSpec) run() loadResult {
	n, warm, dur := s.clients, s.warm, s.dur
	res := loadResult{target: s.target, clients: n, dur: dur, hasMid: len(s.mids) > 0}
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	var errs errorSink
	for _, p := range s.mids {
		resetPeak(p)
	}
	for _, m := range s.openMeters {
		m.begin()
	}
	cs := connectAll(hc, s.url, n, &errs)
	for _, m := range s.openMeters {
		m.end()
	}

	start := time.Now()
	from, end := start.Add(warm), start.Add(warm+dur)
	var midA, midB, upA, upB procSample
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		time.Sleep(time.Until(from))
		midA, upA = sampleAll(s.mids), sampleAll(s.ups)
		for _, m := range s.meters {
			m.begin()
		}
		time.Sleep(time.Until(end))
		midB, upB = sampleAll(s.mids), sampleAll(s.ups)
		for _, m := range s.meters {
			m.end()
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
				err := c.callTool(s.params)
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
	for _, m := range s.closeMeters {
		m.begin()
	}
	for _, c := range cs {
		c.close()
	}
	for _, m := range s.closeMeters {
		m.end()
	}
	all := make([]time.Duration, 0, calls.Load())
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	res.lat, res.calls = all, len(all)
	res.errs, res.errMsgs = errs.n, errs.msgs
	res.midCPU, res.midPeakKiB = midB.cpu-midA.cpu, midB.hwm
	res.upCPU, res.hasUp = upB.cpu-upA.cpu, len(s.ups) > 0
	return res
}

// versusTable writes the stdio scenario's comparison of each of names with the target against, at each concurrency.
func versusTable(out io.Writer, clients []int, title, against string, names []string, byKey map[string]loadResult) {
	fmt.Fprintf(out, "\n### %s (same run)\n\n| clients | target | calls/s | theirs | ÷ theirs calls/s | CPU µs/call | theirs | ÷ theirs CPU per call | added p50 µs over theirs | upstream CPU µs/call ÷ theirs |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", title)
	for _, n := range clients {
		p := byKey[fmt.Sprint(against, n)]
		pc := perCall(p.midCPU, p.calls)
		for _, name := range names {
			g := byKey[fmt.Sprint(name, n)]
			gc := perCall(g.midCPU, g.calls)
			fmt.Fprintf(out, "| %d | %s | %.0f | %.0f | %s | %.1f | %.1f | %s | %s | %s |\n", n, name, g.throughput(), p.throughput(),
				ratio(g.throughput(), p.throughput()), gc*1e6, pc*1e6, ratio(gc, pc), us(g.pct(.5)-p.pct(.5)),
				ratio(perCall(g.upCPU, g.calls), perCall(p.upCPU, p.calls)))
		}
	}
}

// perCall is CPU seconds per call (0 without calls).
func perCall(cpu float64, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return cpu / float64(calls)
}

// pctOf is the p-th percentile of lats, sorted.
func pctOf(lats []time.Duration, p float64) time.Duration {
	return loadResult{lat: lats}.pct(p)
}

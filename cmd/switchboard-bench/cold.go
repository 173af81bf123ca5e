package main

// The cold scenario (issue 20): time to ready with many upstreams, over HTTP and over stdio, each against one
// upstream of the same transport, interleaved round by round.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// coldCase is one gateway configuration of the cold scenario.
type coldCase struct {
	transport string // "http" or "stdio"
	upstreams int
}

// coldStart is one start of the gateway, until GET /readyz 200.
type coldStart struct {
	ready time.Duration // from just before the exec to the 200
	cpu   float64       // the gateway's CPU by then (cpuPrecise)
	rss   int64         // the gateway's VmRSS then, KiB
	// The upstream processes: the gateway's children (stdio), or the one HTTP upstream process serving every
	// path, whose CPU is counted from just before the exec and whose RSS, shared by every start, is not reported.
	upProcs int
	upCPU   float64
	upRSS   int64 // KiB; -1: not reported
}

func (b *bench) coldScenario() error {
	b.logf("cold: %d upstreams, %d rounds", b.coldUpstreams, b.coldRounds)
	up, err := startChild("cold upstream", true, b.self, "upstream", "-http", "127.0.0.1:0", "-tools", strconv.Itoa(b.coldTools))
	if err != nil {
		return err
	}
	defer up.stop()
	cases := []coldCase{{"http", 1}, {"http", b.coldUpstreams}, {"stdio", 1}, {"stdio", b.coldUpstreams}}
	starts := map[coldCase][]coldStart{}
	for round := range b.coldRounds {
		for _, c := range cases {
			b.logf("cold: round %d, %d %s upstreams", round+1, c.upstreams, c.transport)
			s, err := b.coldOnce(c, up)
			if err != nil {
				return fmt.Errorf("%d %s upstreams: %w", c.upstreams, c.transport, err)
			}
			starts[c] = append(starts[c], s)
		}
	}
	fmt.Fprintf(b.out, "\n## Cold start: time to ready with %d upstreams\n\n"+
		"The gateway started on a config of N upstreams, each with %d tools, until `GET /readyz` answers 200 (polled every 5 ms): "+
		"HTTP upstreams are paths of one upstream process (`/u/NNN/mcp`, `session: shared`); stdio upstreams are N children of "+
		"the tool's stdio upstream (`session: shared`, each its own process). The four starts run in turn, in %d round(s); "+
		"each figure is the median of the rounds (min–max in brackets). Time is from just before the exec to the 200. "+
		"The upstream processes are the gateway's stdio children, or the one HTTP upstream process (its CPU from just before the exec; "+
		"its RSS, shared by every start, not shown). CPU is run time by then, the gateway's own without its children (the sum of its threads' schedstat: a start takes milliseconds, "+
		"below /proc/PID/stat's 10 ms ticks); RSS is VmRSS at that moment.\n\n",
		b.coldUpstreams, b.coldTools, b.coldRounds)
	fmt.Fprintf(b.out, "| upstreams | transport | ready ms | gateway CPU ms until ready | gateway RSS MiB | upstream processes | their CPU ms until ready | their RSS MiB |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cases {
		ss := starts[c]
		fmt.Fprintf(b.out, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", c.upstreams, c.transport,
			medianOf(ss, func(s coldStart) float64 { return float64(s.ready) / float64(time.Millisecond) }, "%.0f"),
			medianOf(ss, func(s coldStart) float64 { return s.cpu * 1000 }, "%.1f"),
			medianOf(ss, func(s coldStart) float64 { return float64(s.rss) / 1024 }, "%.1f"),
			fmt.Sprint(ss[0].upProcs),
			medianOf(ss, func(s coldStart) float64 { return s.upCPU * 1000 }, "%.1f"),
			upRSS(ss))
	}
	fmt.Fprintf(b.out, "\n| transport | ready, %d ÷ 1 | gateway CPU, %d ÷ 1 | added ready ms per upstream | added gateway CPU ms per upstream | added gateway RSS KiB per upstream |\n|---|---:|---:|---:|---:|---:|\n", b.coldUpstreams, b.coldUpstreams)
	for _, t := range []string{"http", "stdio"} {
		one, many := starts[coldCase{t, 1}], starts[coldCase{t, b.coldUpstreams}]
		r1, rn := median(one, func(s coldStart) float64 { return s.ready.Seconds() * 1000 }), median(many, func(s coldStart) float64 { return s.ready.Seconds() * 1000 })
		c1, cn := median(one, func(s coldStart) float64 { return s.cpu * 1000 }), median(many, func(s coldStart) float64 { return s.cpu * 1000 })
		m1, mn := median(one, func(s coldStart) float64 { return float64(s.rss) }), median(many, func(s coldStart) float64 { return float64(s.rss) })
		k := float64(max(b.coldUpstreams-1, 1))
		fmt.Fprintf(b.out, "| %s | %s | %s | %.1f | %.2f | %.0f |\n", t, ratio(rn, r1), ratio(cn, c1), (rn-r1)/k, (cn-c1)/k, (mn-m1)/k)
	}
	return nil
}

// coldOnce starts a gateway on c's config, waits for ready, reads it and its children, and stops it.
func (b *bench) coldOnce(c coldCase, up *child) (coldStart, error) {
	var cfg strings.Builder
	cfg.WriteString("upstreams:\n")
	for i := range c.upstreams {
		if c.transport == "http" {
			fmt.Fprintf(&cfg, "  - {name: u%03d, url: \"http://%s/u/%03d/mcp\", session: shared}\n", i, up.addr, i)
		} else {
			fmt.Fprintf(&cfg, "  - {name: s%03d, command: %q, args: [upstream, -tools, %d], session: shared, envPassthrough: [%s]}\n",
				i, b.self, b.coldTools, envChild)
		}
	}
	addr, err := freePort()
	if err != nil {
		return coldStart{}, err
	}
	upCPU0, _ := cpuPrecise(up.pid())
	t0 := time.Now()
	g, err := b.launchGateway(fmt.Sprintf("cold-%s-%d", c.transport, c.upstreams), addr, cfg.String())
	if err != nil {
		return coldStart{}, err
	}
	defer g.stop()
	if err := g.waitReady(5 * time.Millisecond); err != nil {
		return coldStart{}, err
	}
	s := coldStart{ready: time.Since(t0)}
	s.cpu, err = cpuPrecise(g.pid())
	if err != nil {
		return s, err
	}
	s.rss, _ = memKiB(g.pid(), "VmRSS")
	if c.transport == "http" {
		upCPU1, _ := cpuPrecise(up.pid())
		s.upProcs, s.upCPU, s.upRSS = 1, upCPU1-upCPU0, -1
		return s, nil
	}
	kids := childrenOf(g.pid())
	s.upProcs = len(kids)
	for _, k := range kids {
		c, _ := cpuPrecise(k)
		r, _ := memKiB(k, "VmRSS")
		s.upCPU += c
		s.upRSS += r
	}
	return s, nil
}

// upRSS formats the upstream processes' RSS, when reported.
func upRSS(ss []coldStart) string {
	if len(ss) == 0 || ss[0].upRSS < 0 {
		return "–"
	}
	return medianOf(ss, func(s coldStart) float64 { return float64(s.upRSS) / 1024 }, "%.1f")
}

// median is the median of f over ss (0 for none).
func median(ss []coldStart, f func(coldStart) float64) float64 {
	if len(ss) == 0 {
		return 0
	}
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return medianSorted(v)
}

// medianOf formats the median of f over ss, with the range when there is more than one value.
func medianOf(ss []coldStart, f func(coldStart) float64, format string) string {
	m := fmt.Sprintf(format, median(ss, f))
	if len(ss) < 2 {
		return m
	}
	lo, hi := f(ss[0]), f(ss[0])
	for _, s := range ss[1:] {
		lo, hi = min(lo, f(s)), max(hi, f(s))
	}
	return fmt.Sprintf("%s ["+format+"–"+format+"]", m, lo, hi)
}

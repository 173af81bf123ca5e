package main

// -rounds: the load and stdio scenarios run several times in one invocation, and the report ends with what issue
// 37's targets compare, round by round, with the medians.

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// rotate returns ts turned left by k: round k starts with its k-th target.
func rotate[T any](ts []T, k int) []T {
	if len(ts) == 0 {
		return ts
	}
	k %= len(ts)
	return append(slices.Clone(ts[k:]), ts[:k]...)
}

// roundMeasure is one row of the summary: a ratio of two targets' results at one concurrency, in every round.
type roundMeasure struct {
	name    string
	clients int
	of      func(byKey map[string]loadResult, n int) float64 // 0 when either side has no figure
}

// throughputOver is a's calls/s over b's.
func throughputOver(a, b string) func(map[string]loadResult, int) float64 {
	return func(m map[string]loadResult, n int) float64 {
		x, y := m[fmt.Sprint(a, n)], m[fmt.Sprint(b, n)]
		if x.calls == 0 || y.calls == 0 {
			return 0
		}
		return x.throughput() / y.throughput()
	}
}

// cpuOver is a's CPU per call over b's.
func cpuOver(a, b string) func(map[string]loadResult, int) float64 {
	return func(m map[string]loadResult, n int) float64 {
		x, y := m[fmt.Sprint(a, n)], m[fmt.Sprint(b, n)]
		xc, yc := perCall(x.midCPU, x.calls), perCall(y.midCPU, y.calls)
		if xc == 0 || yc == 0 {
			return 0
		}
		return xc / yc
	}
}

// addedOver is a's added p50 (over the direct target's p50) over b's.
func addedOver(a, b string) func(map[string]loadResult, int) float64 {
	return func(m map[string]loadResult, n int) float64 {
		d, x, y := m[fmt.Sprint(directName, n)], m[fmt.Sprint(a, n)], m[fmt.Sprint(b, n)]
		if d.calls == 0 || x.calls == 0 || y.calls == 0 {
			return 0
		}
		ya := y.pct(.5) - d.pct(.5)
		if ya <= 0 {
			return 0
		}
		return float64(x.pct(.5)-d.pct(.5)) / float64(ya)
	}
}

// roundsSummary writes, for each measure, its value in each round, the median and the range. peer is the real
// peer's label, "" without one.
func roundsSummary(out io.Writer, clients, stdioClients []int, peer string, loadRuns, stdioRuns []map[string]loadResult) {
	var load, stdio []roundMeasure
	for _, n := range clients {
		load = append(load,
			roundMeasure{"serve per-client ÷ proxy, calls/s", n, throughputOver(perClientName, proxyName)},
			roundMeasure{"serve shared ÷ proxy, calls/s", n, throughputOver(sharedName, proxyName)},
			roundMeasure{"serve per-client added p50 ÷ proxy's", n, addedOver(perClientName, proxyName)},
			roundMeasure{"serve ÷ bare forwarding path, CPU per call", n, cpuOver(perClientName, bareName)})
		if peer != "" {
			load = append(load,
				roundMeasure{"serve shared ÷ " + peer + ", calls/s", n, throughputOver(sharedName, peer)},
				roundMeasure{"serve shared added p50 ÷ " + peer + "'s", n, addedOver(sharedName, peer)})
		}
	}
	for _, n := range stdioClients {
		against := brName
		if peer != "" {
			against = peerStdioName(peer)
		}
		stdio = append(stdio,
			roundMeasure{"serve (default) ÷ " + against + ", calls/s", n, throughputOver(gwName, against)},
			roundMeasure{"serve (default) ÷ " + against + ", CPU per call", n, cpuOver(gwName, against)},
			roundMeasure{"serve (`protocol: legacy`) ÷ " + against + ", calls/s", n, throughputOver(gwlName, against)},
			roundMeasure{"serve (`protocol: modern`) ÷ " + against + ", calls/s", n, throughputOver(gwmName, against)})
		if peer != "" {
			stdio = append(stdio, roundMeasure{"simple bridge ÷ " + against + ", calls/s", n, throughputOver(brName, against)})
		}
	}
	fmt.Fprintf(out, "\n## Over the rounds\n\nEach measure in each round (a ratio of two targets of that round), then the median and the range over the rounds.\n")
	measureTable(out, "Load", load, loadRuns)
	measureTable(out, "Shared stdio upstream", stdio, stdioRuns)
}

// measureTable writes one scenario's measures over its rounds; nothing when the scenario did not run.
func measureTable(out io.Writer, title string, ms []roundMeasure, runs []map[string]loadResult) {
	if len(runs) == 0 || len(ms) == 0 {
		return
	}
	fmt.Fprintf(out, "\n### %s\n\n| measure | clients |", title)
	for i := range runs {
		fmt.Fprintf(out, " round %d |", i+1)
	}
	fmt.Fprintf(out, " median | range |\n|---|---:|%s---:|---|\n", strings.Repeat("---:|", len(runs)))
	for _, m := range ms {
		fmt.Fprintf(out, "| %s | %d |", m.name, m.clients)
		var vs []float64
		for _, r := range runs {
			v := m.of(r, m.clients)
			if v == 0 {
				fmt.Fprint(out, " – |")
				continue
			}
			vs = append(vs, v)
			fmt.Fprintf(out, " %.2f |", v)
		}
		if len(vs) == 0 {
			fmt.Fprint(out, " – | – |\n")
			continue
		}
		slices.Sort(vs)
		fmt.Fprintf(out, " **%.2f** | %.2f–%.2f |\n", medianSorted(vs), vs[0], vs[len(vs)-1])
	}
}

// medianSorted is the median of vs, sorted and not empty.
func medianSorted(vs []float64) float64 {
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

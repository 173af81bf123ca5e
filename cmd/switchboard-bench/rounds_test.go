package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRotate(t *testing.T) {
	tests := []struct {
		in   []string
		k    int
		want string
	}{
		{[]string{"a", "b", "c"}, 0, "abc"},
		{[]string{"a", "b", "c"}, 1, "bca"},
		{[]string{"a", "b", "c"}, 2, "cab"},
		{[]string{"a", "b", "c"}, 4, "bca"},
		{nil, 3, ""},
	}
	for _, tt := range tests {
		in := strings.Join(tt.in, "")
		if got := strings.Join(rotate(tt.in, tt.k), ""); got != tt.want {
			t.Errorf("rotate(%q, %d) = %q, want %q", tt.in, tt.k, got, tt.want)
		}
		if strings.Join(tt.in, "") != in {
			t.Errorf("rotate changed its input %q", in)
		}
	}
}

// result is a loadResult of calls in one second, cpu seconds in the middle, and every latency p50.
func result(calls int, cpu float64, p50 time.Duration) loadResult {
	return loadResult{calls: calls, dur: time.Second, midCPU: cpu, lat: []time.Duration{p50}}
}

// TestRoundsSummary: each measure is the ratio of its two targets in each round, with the median and range over
// the rounds; a round without one side shows "–" and is left out of the median.
func TestRoundsSummary(t *testing.T) {
	round := func(pc, bare int, cpu float64, gwAdded time.Duration) map[string]loadResult {
		return map[string]loadResult{
			"direct1":                  result(4000, 0, 100*time.Microsecond),
			"proxy1":                   result(1000, 1, 300*time.Microsecond),
			"switchboard per-client1":  result(pc, cpu, 100*time.Microsecond+gwAdded),
			"switchboard shared1":      result(1000, 1, 300*time.Microsecond),
			"bare gateway per-client1": result(bare, 1, 200*time.Microsecond),
		}
	}
	// The direct p50 is 100 µs and the proxy's 300, so the proxy adds 200. Per-client adds 100, 300 and 200 µs in
	// the three rounds, at 2000, 1000 and 1500 calls/s against the proxy's 1000. Round 3 has no bare gateway.
	r1 := round(2000, 2000, 2, 100*time.Microsecond)
	r2 := round(1000, 1000, 1.5, 300*time.Microsecond)
	r3 := round(1500, 0, 1, 200*time.Microsecond)
	delete(r3, "bare gateway per-client1")
	var out bytes.Buffer
	roundsSummary(&out, []int{1}, nil, "", []map[string]loadResult{r1, r2, r3}, nil)
	got := out.String()
	for _, want := range []string{
		"| measure | clients | round 1 | round 2 | round 3 | median | range |",
		"| serve per-client ÷ proxy, calls/s | 1 | 2.00 | 1.00 | 1.50 | **1.50** | 1.00–2.00 |",
		"| serve shared ÷ proxy, calls/s | 1 | 1.00 | 1.00 | 1.00 | **1.00** | 1.00–1.00 |",
		"| serve per-client added p50 ÷ proxy's | 1 | 0.50 | 1.50 | 1.00 | **1.00** | 0.50–1.50 |",
		// CPU per call: serve 2/2000 against bare 1/2000 = 2.00; 1.5/1000 against 1/1000 = 1.50; no bare: –.
		"| serve ÷ bare forwarding path, CPU per call | 1 | 2.00 | 1.50 | – | **1.75** | 1.50–2.00 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary has no %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Shared stdio") {
		t.Errorf("a summary without stdio rounds has a stdio table:\n%s", got)
	}
}

// TestRoundsFlag: -rounds below 1 is refused.
func TestRoundsFlag(t *testing.T) {
	var out, log bytes.Buffer
	if code := cmdRun([]string{"-rounds", "0", "-scenarios", "stdio"}, &out, &log); code != 2 || !strings.Contains(log.String(), "-rounds: at least 1") {
		t.Errorf("-rounds 0: exit %d, %q; want 2 and the reason", code, log.String())
	}
}

// TestBenchRounds runs the stdio scenario in two rounds end to end and checks that both ran and the summary
// compares each era of the gateway with the bridge in both. It asserts no number.
func TestBenchRounds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tool reads /proc")
	}
	out := runTool(t, "-scenarios", "stdio", "-stdio-clients", "1", "-duration", "300ms", "-rounds", "2", "-mcp-proxy", "none")
	for _, want := range []string{"# stdio, round 1 of 2", "# stdio, round 2 of 2", "## Over the rounds", "### Shared stdio upstream",
		"| measure | clients | round 1 | round 2 | median | range |", "| serve (default) ÷ simple bridge, one stdio child, calls/s | 1 |",
		"| serve (`protocol: modern`) ÷ simple bridge, one stdio child, calls/s | 1 |", "load and stdio: 2 rounds"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "### Load") {
		t.Errorf("the summary has a load table without the load scenario:\n%s", out.String())
	}
}

package main

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand for the tool's children: the tool re-executes itself (os.Executable) as
// the upstream, the proxy and the gateway's stdio upstream.
func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" && len(os.Args) > 1 {
		switch os.Args[1] {
		case "upstream", "proxy", "gateway":
			os.Exit(dispatch(os.Args[1:]))
		}
	}
	os.Exit(m.Run())
}

// TestBenchShort runs the short mode end to end (every scenario, the gateway built from ./cmd/switchboard) and
// fails on any error. It asserts no number: CI machines are too noisy for that.
func TestBenchShort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tool reads /proc")
	}
	var out, log bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- cmdRun([]string{"-short"}, &out, &log) }()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("switchboard-bench -short: exit %d\n%s\n%s", code, log.String(), out.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("switchboard-bench -short did not finish within 3 minutes\n%s", log.String())
	}
	for _, want := range []string{"## Load", "### Ratios", "## Shared stdio upstream", "## Catalog", "## Idle sessions", "| 8 | switchboard per-client |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
	t.Logf("report:\n%s", out.String())
}

// TestBenchSearch runs the search scenario in short mode (in process: no gateway is built) and checks that the
// report has every measure, and no scenario failed. It asserts no number.
func TestBenchSearch(t *testing.T) {
	var out, log bytes.Buffer
	if code := cmdRun([]string{"-short", "-scenarios", "search"}, &out, &log); code != 0 {
		t.Fatalf("switchboard-bench -short -scenarios search: exit %d\n%s\n%s", code, log.String(), out.String())
	}
	report := out.String()
	for _, want := range []string{
		"| gateway | not built (no scenario needs it) |",
		"search: tools [1000 10000], 1 passes",
		"## Tool search index",
		"| queries | tools | servers | recall@1 | recall@5 | recall@10 | MRR |",
		"| tools | build median ms | build min ms | heap B/tool | searches | p50 µs | p90 µs | p99 µs |",
		"\n| 1000 | ", "\n| 10000 | ",
		"One tool changed at 10000 tools: `With`",
		"| tools | updates | p50 µs | p99 µs |",
		"| recall@5 ≥ 0.85 |", "| search p50 ≤ 1 ms at 10000 tools |", "| search p99 ≤ 5 ms at 10000 tools |",
		"| index heap ≤ 4 KiB per tool at 10000 tools |", "| build ≤ 1 s at 10000 tools |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report has no %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "failed**") {
		t.Errorf("a scenario failed:\n%s", report)
	}
	t.Logf("report:\n%s", report)
}

func TestBenchSearchFlags(t *testing.T) {
	for _, args := range [][]string{{"-scenarios", "search,nope"}, {"-scenarios", "search", "-search-tools", "0"}} {
		var out, log bytes.Buffer
		if code := cmdRun(args, &out, &log); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, log.String())
		}
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts("1, 8,32")
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 8 || got[2] != 32 {
		t.Fatalf("parseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-3"} {
		if _, err := parseInts(bad); err == nil {
			t.Errorf("parseInts(%q): no error", bad)
		}
	}
}

func TestPercentiles(t *testing.T) {
	r := loadResult{}
	for i := 1; i <= 100; i++ {
		r.lat = append(r.lat, time.Duration(i))
	}
	if r.pct(.5) != 50 || r.pct(.99) != 99 || r.max() != 100 || r.pct(1) != 100 {
		t.Fatalf("p50 %v p99 %v max %v", r.pct(.5), r.pct(.99), r.max())
	}
	if (loadResult{}).pct(.5) != 0 {
		t.Fatal("empty percentiles")
	}
}

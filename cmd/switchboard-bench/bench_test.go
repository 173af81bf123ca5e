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

package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain lets the test binary stand for the tool's children: the tool re-executes itself (os.Executable) as
// the upstream, the proxy and the gateway's stdio upstream.
func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" && len(os.Args) > 1 {
		switch os.Args[1] {
		case "upstream", "proxy", "gateway", "stdiobridge":
			os.Exit(dispatch(os.Args[1:]))
		}
	}
	os.Exit(m.Run())
}

// runTool runs the tool in process with args and returns its report. It fails the test on a non-zero exit, or
// when the run takes over 5 minutes.
func runTool(t *testing.T, args ...string) *bytes.Buffer {
	t.Helper()
	var out, log bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- cmdRun(args, &out, &log) }()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("switchboard-bench %s: exit %d\n%s\n%s", strings.Join(args, " "), code, log.String(), out.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("switchboard-bench %s did not finish within 5 minutes\n%s", strings.Join(args, " "), log.String())
	}
	return &out
}

// TestBenchShort runs the short mode end to end (every scenario, the gateway built from ./cmd/switchboard) and
// fails on any error. It asserts no number: CI machines are too noisy for that.
func TestBenchShort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tool reads /proc")
	}
	out := runTool(t, "-short")
	want := []string{"## Load", "### Ratios", "## Shared stdio upstream", "| 8 | simple bridge, one stdio child |", "### Gateway ÷ simple bridge",
		"## Catalog", "## Idle sessions", "| 8 | switchboard per-client |", "| 8 | bare gateway per-client |", "bare/proxy added p50", "upstream dials /1000 calls |",
		"| 8 | switchboard, shared stdio, protocol: legacy |",
		"| 8 | mcp-proxy v0.43.2 |", "| 8 | mcp-proxy v0.43.2, one stdio child |", "### Against mcp-proxy v0.43.2, a real peer",
		"### Gateway ÷ mcp-proxy v0.43.2, a real peer",
		"## Cold start", "| 10 | stdio |", "| 10 | http |"}
	if _, err := exec.LookPath("redis-server"); err == nil {
		want = append(want, "## Replicas", "| 8 | 2 replicas + Redis |", "| 8 | 1 replica, no Redis |", "### Kill test")
	} else {
		t.Log("redis-server is not on PATH: the replicas scenario is skipped")
	}
	for _, want := range want {
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

// TestBalancerRefusedBackend: a backend that refuses connections is marked down and its requests go to the other,
// with their bodies; requests then alternate no more.
func TestBalancerRefusedBackend(t *testing.T) {
	var got []string
	var mu sync.Mutex
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer live.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // its port now refuses connections
	lb, err := newBalancer(false, deadURL, live.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	for i := range 6 {
		resp, err := hc.Post(lb.url, "application/json", strings.NewReader(fmt.Sprint("body ", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
	if !lb.backends[0].down.Load() || lb.backends[1].down.Load() {
		t.Fatalf("down: %v, %v; want the refused backend down", lb.backends[0].down.Load(), lb.backends[1].down.Load())
	}
	if n := lb.resent.Load(); n != 1 {
		t.Errorf("resent %d requests, want 1 (only the first dial to the dead backend)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 6 || got[0] != "body 0" || got[5] != "body 5" {
		t.Errorf("the live backend got %q", got)
	}
}

// TestBalancerAffinity: with affinity a session's requests stay on one backend; without, they alternate.
func TestBalancerAffinity(t *testing.T) {
	var hits [2]atomic.Int64
	var bases []string
	for i := range hits {
		s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits[i].Add(1) }))
		defer s.Close()
		bases = append(bases, s.URL)
	}
	for _, affinity := range []bool{false, true} {
		hits[0].Store(0)
		hits[1].Store(0)
		lb, err := newBalancer(affinity, bases...)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			req, _ := http.NewRequest(http.MethodPost, lb.url, strings.NewReader("{}"))
			req.Header.Set("Mcp-Session-Id", "session-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		lb.close()
		a, b := hits[0].Load(), hits[1].Load()
		if affinity && a*b != 0 || !affinity && (a != 5 || b != 5) {
			t.Errorf("affinity %v: backends got %d and %d", affinity, a, b)
		}
	}
}

func TestParseInfo(t *testing.T) {
	st := parseInfo("# Stats\r\ntotal_reads_processed:42\r\ntotal_net_input_bytes:100\r\n# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:0.25\r\n" +
		"# Commandstats\r\ncmdstat_info:calls=3,usec=1\r\ncmdstat_xadd:calls=7,usec=2,usec_per_call=0.1\r\ncmdstat_client|setinfo:calls=2,usec=1\r\n")
	if st.reads != 42 || st.netIn != 100 || st.cpu != 1.75 || st.cmds["xadd"] != 7 || st.cmds["client|setinfo"] != 2 {
		t.Fatalf("parseInfo: %+v", st)
	}
	if _, ok := st.cmds["info"]; ok {
		t.Error("INFO itself counted")
	}
	m := &redisMeter{a: redisStats{cmds: map[string]int64{"xadd": 5}, reads: 10}, b: st}
	d, err := m.delta()
	if err != nil || d.total != 4 || d.reads != 31 || d.cmds["xadd"] != 2 {
		t.Fatalf("delta %+v, %v", d, err)
	}
}

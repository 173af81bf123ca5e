package main

// The scenarios and the report.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// envChild marks a process started by the tool; the test binary uses it to act as the tool's children.
const envChild = "SWITCHBOARD_BENCH_CHILD"

type bench struct {
	self, gateway string
	dir           string
	out           io.Writer // the report
	progress      io.Writer
	failed        []string // scenarios with errors

	short                                    bool
	clients, stdioClients                    []int
	duration, warm                           time.Duration
	catUpstreams, catTools, pageSize, passes int
	idleSessions                             int
	profileDir, profileScenario              string
	searchTools                              []int // tool counts of the search scenario's scale runs
	searchPasses, searchBuilds, searchWiths  int
	scenarios                                []string
	needGateway                              bool // a scenario other than search
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("switchboard-bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	short := fl.Bool("short", false, "CI mode: 1 and 8 clients, 2s each, a small catalog, 500 idle sessions, one search pass")
	clients := fl.String("clients", "1,8,32,64", "concurrent clients of the load scenario")
	stdioClients := fl.String("stdio-clients", "1,64", "concurrent clients of the shared stdio scenario")
	duration := fl.Duration("duration", 10*time.Second, "measured time of each load run (after a warm-up of a fifth of it, at most 2s)")
	gw := fl.String("gateway", "", "the switchboard binary; default: build ./cmd/switchboard into a temporary directory")
	scen := fl.String("scenarios", "load,stdio,catalog,idle", "scenarios to run: load, stdio, catalog, idle, search")
	catUp := fl.Int("catalog-upstreams", 100, "upstreams of the catalog scenario")
	catTools := fl.Int("catalog-tools", 100, "tools per upstream of the catalog scenario")
	pageSize := fl.Int("page-size", 100, "the gateway's pageSize in the catalog scenario")
	passes := fl.Int("catalog-passes", 5, "times the whole catalog is listed")
	idle := fl.Int("idle-sessions", 10000, "sessions of the idle scenario")
	searchTools := fl.String("search-tools", "1000,10000", "tool counts of the search scenario's latency, build and memory runs")
	searchPasses := fl.Int("search-passes", 30, "times each query of the evaluation set is searched at each tool count")
	outFile := fl.String("o", "", "also write the report to this file")
	profile := fl.String("profile", "", "write CPU and heap profiles of the gateway of scenario -profile-scenario into this directory")
	profScen := fl.String("profile-scenario", "load", "scenario whose gateway is profiled: load, stdio, catalog or idle")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *short {
		*clients, *stdioClients, *duration = "1,8", "1,8", 2*time.Second
		*catUp, *catTools, *pageSize, *passes, *idle = 10, 20, 50, 2, 500
		*searchPasses = 1
	}
	b := &bench{short: *short, duration: *duration, catUpstreams: *catUp, catTools: *catTools, pageSize: *pageSize,
		passes: *passes, idleSessions: *idle, progress: stderr, profileDir: *profile, profileScenario: *profScen,
		searchPasses: max(*searchPasses, 1), searchBuilds: 5, searchWiths: 200}
	if *short {
		b.searchBuilds, b.searchWiths = 2, 20
	}
	b.warm = min(*duration/5, 2*time.Second)
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case "load", "stdio", "catalog", "idle":
			b.needGateway = true
		case "search": // in process: no gateway, no children, no network
		default:
			fmt.Fprintf(stderr, "unknown scenario %q\n", s)
			return 2
		}
		b.scenarios = append(b.scenarios, s)
	}
	var err error
	if b.searchTools, err = parseInts(*searchTools); err != nil {
		fmt.Fprintln(stderr, "-search-tools:", err)
		return 2
	}
	if b.clients, err = parseInts(*clients); err != nil {
		fmt.Fprintln(stderr, "-clients:", err)
		return 2
	}
	if b.stdioClients, err = parseInts(*stdioClients); err != nil {
		fmt.Fprintln(stderr, "-stdio-clients:", err)
		return 2
	}
	if b.self, err = os.Executable(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if b.dir, err = os.MkdirTemp("", "switchboard-bench-"); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(b.dir)
	os.Setenv(envChild, "1") // children inherit it (the gateway passes it to its stdio child: envPassthrough)
	b.gateway = *gw
	if b.gateway == "" && b.needGateway {
		fmt.Fprintln(stderr, "building ./cmd/switchboard ...")
		if b.gateway, err = buildGateway(b.dir); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	var report strings.Builder
	b.out = &report
	b.machine()
	for _, s := range b.scenarios {
		var err error
		switch s {
		case "load":
			err = b.loadScenario()
		case "stdio":
			err = b.stdioScenario()
		case "catalog":
			err = b.catalogScenario()
		case "idle":
			err = b.idleScenario()
		case "search":
			err = b.searchScenario()
		}
		if err != nil {
			b.failed = append(b.failed, fmt.Sprintf("%s: %v", s, err))
			fmt.Fprintf(&report, "\n**%s failed**: %v\n", s, err)
		}
	}
	fmt.Fprint(stdout, report.String())
	if *outFile != "" {
		if err := os.WriteFile(*outFile, []byte(report.String()), 0o644); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if len(b.failed) > 0 {
		fmt.Fprintf(stderr, "switchboard-bench: FAILED: %s\n", strings.Join(b.failed, "; "))
		return 1
	}
	return 0
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.progress, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// machine writes the header: the machine and the tool's settings.
func (b *bench) machine() {
	model := "unknown"
	if ci, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(ci), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	var memTotal string
	if mi, err := os.ReadFile("/proc/meminfo"); err == nil {
		memTotal = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mi), "\n", 2)[0], "MemTotal:"))
	}
	gv := []byte("not built (no scenario needs it)")
	if b.gateway != "" {
		gv, _ = exec.Command(b.gateway, "version").Output()
	}
	fmt.Fprintf(b.out, "## Machine\n\n| | |\n|---|---|\n")
	fmt.Fprintf(b.out, "| CPUs (nproc) | %d |\n| CPU | %s |\n| memory | %s |\n| kernel | %s |\n| Go | %s %s/%s |\n| gateway | %s |\n",
		runtime.NumCPU(), model, memTotal, strings.TrimSpace(string(kernel)), runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.TrimSpace(string(gv)))
	var settings []string
	if b.needGateway {
		settings = append(settings, fmt.Sprintf("clients %v, %s measured after %s warm-up", b.clients, b.duration, b.warm))
	}
	if slices.Contains(b.scenarios, "search") {
		settings = append(settings, fmt.Sprintf("search: tools %v, %d passes, %d builds, %d updates", b.searchTools, b.searchPasses, b.searchBuilds, b.searchWiths))
	}
	fmt.Fprintf(b.out, "| settings | %s; short=%v |\n", strings.Join(settings, "; "), b.short)
}

func us(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}

// check records a scenario's errors; a run with any error fails.
func (b *bench) check(results ...loadResult) error {
	var msgs []string
	for _, r := range results {
		if r.errs > 0 {
			msgs = append(msgs, fmt.Sprintf("%s, %d clients: %d errors (%s)", r.target, r.clients, r.errs, strings.Join(r.errMsgs, " | ")))
		} else if r.calls == 0 {
			msgs = append(msgs, fmt.Sprintf("%s, %d clients: no call completed", r.target, r.clients))
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func (b *bench) resultTable(rs []loadResult) {
	fmt.Fprintf(b.out, "\n| clients | target | calls/s | p50 µs | p90 µs | p99 µs | max µs | errors | middle CPU s | middle CPU µs/call | middle peak RSS MiB | upstream CPU µs/call |\n")
	fmt.Fprintf(b.out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		cpu, per, rss := "–", "–", "–"
		if r.hasMid {
			cpu = fmt.Sprintf("%.2f", r.midCPU)
			if r.calls > 0 {
				per = fmt.Sprintf("%.1f", r.midCPU/float64(r.calls)*1e6)
			}
			rss = fmt.Sprintf("%.1f", float64(r.midPeakKiB)/1024)
		}
		up := "–"
		if r.calls > 0 {
			up = fmt.Sprintf("%.1f", r.upCPU/float64(r.calls)*1e6)
		}
		fmt.Fprintf(b.out, "| %d | %s | %.0f | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", r.clients, r.target, r.throughput(),
			us(r.pct(0.5)), us(r.pct(0.9)), us(r.pct(0.99)), us(r.max()), r.errs, cpu, per, rss, up)
	}
}

// loadScenario: direct, proxy and gateway (per-client and shared upstream sessions) at each concurrency,
// interleaved so that drift of the machine hits every target alike.
func (b *bench) loadScenario() error {
	b.logf("load: starting upstream, proxy, gateway")
	up, err := startChild("upstream", true, b.self, "upstream", "-http", "127.0.0.1:0", "-tools", "1")
	if err != nil {
		return err
	}
	defer up.stop()
	upURL := "http://" + up.addr + "/mcp"
	px, err := startChild("proxy", true, b.self, "proxy", "-target", "http://"+up.addr)
	if err != nil {
		return err
	}
	defer px.stop()
	gw, err := b.startGateway("load", fmt.Sprintf(`upstreams:
  - {name: pc, url: %q, session: per-client}
  - {name: sh, url: %q, session: shared}
`, upURL, upURL))
	if err != nil {
		return err
	}
	defer gw.stop()

	const args = `"arguments":{"text":"hello from switchboard-bench"}}`
	targets := []struct {
		name, url, params string
		mid               *child
	}{
		{"direct", upURL, `{"name":"echo",` + args, nil},
		{"proxy", "http://" + px.addr + "/mcp", `{"name":"echo",` + args, px},
		{"switchboard per-client", gw.url, `{"name":"pc__echo",` + args, gw.child},
		{"switchboard shared", gw.url, `{"name":"sh__echo",` + args, gw.child},
	}
	var all []loadResult
	byKey := map[string]loadResult{}
	for _, n := range b.clients {
		for _, t := range targets {
			b.logf("load: %s, %d clients", t.name, n)
			r := runLoad(t.name, t.url, t.params, n, b.warm, b.duration, t.mid, up)
			all = append(all, r)
			byKey[fmt.Sprint(t.name, n)] = r
		}
	}
	fmt.Fprintf(b.out, "\n## Load: tools/call echo on a fast upstream (Go SDK, streamable HTTP, stateful)\n")
	fmt.Fprintf(b.out, "\nEach client: its own session (initialize, notifications/initialized), then tools/call in a closed loop. "+
		"\"Middle\" is the process between client and upstream (proxy or gateway); its CPU is utime+stime over the measured window.\n")
	b.resultTable(all)
	fmt.Fprintf(b.out, "\n### Ratios (same run)\n\n| clients | gw/direct calls/s | gw/proxy calls/s | proxy/direct calls/s | proxy added p50 µs | gw added p50 µs | gw/proxy added p50 | gw shared/proxy calls/s | gw shared added p50 µs | gw CPU µs/msg |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range b.clients {
		d, p, g, s := byKey[fmt.Sprint("direct", n)], byKey[fmt.Sprint("proxy", n)], byKey[fmt.Sprint("switchboard per-client", n)], byKey[fmt.Sprint("switchboard shared", n)]
		pa, ga, sa := p.pct(.5)-d.pct(.5), g.pct(.5)-d.pct(.5), s.pct(.5)-d.pct(.5)
		perMsg := "–"
		if g.calls > 0 {
			perMsg = fmt.Sprintf("%.1f", g.midCPU/float64(2*g.calls)*1e6)
		}
		fmt.Fprintf(b.out, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n,
			ratio(g.throughput(), d.throughput()), ratio(g.throughput(), p.throughput()), ratio(p.throughput(), d.throughput()),
			us(pa), us(ga), ratio(float64(ga), float64(pa)), ratio(s.throughput(), p.throughput()), us(sa), perMsg)
	}
	fmt.Fprintf(b.out, "\n(gw = switchboard per-client; a message is a request or a response, two per call.)\n")
	return withLog(b.check(all...), gw.child)
}

// stdioScenario: one stdio upstream shared by every client, 1 client vs many.
func (b *bench) stdioScenario() error {
	b.logf("stdio: starting gateway")
	gw, err := b.startGateway("stdio", fmt.Sprintf(`upstreams:
  - {name: solo, command: %q, args: [upstream], session: shared, prefix: "", envPassthrough: [%s]}
`, b.self, envChild)) // the child is this binary, told by envChild to act as an upstream
	if err != nil {
		return err
	}
	defer gw.stop()
	var rs []loadResult
	for _, n := range b.stdioClients {
		b.logf("stdio: %d clients", n)
		rs = append(rs, runLoad("switchboard, shared stdio", gw.url, `{"name":"echo","arguments":{"text":"hello from switchboard-bench"}}`, n, b.warm, b.duration, gw.child, nil))
	}
	fmt.Fprintf(b.out, "\n## Shared stdio upstream\n\nOne stdio child (the same Go SDK server, `session: shared`) behind the gateway; every client calls echo through it.\n")
	b.resultTable(rs)
	if len(rs) > 1 {
		fmt.Fprintf(b.out, "\nThroughput with %d clients / with %d: **%s** (≥ 1 means sharing costs nothing).\n",
			rs[len(rs)-1].clients, rs[0].clients, ratio(rs[len(rs)-1].throughput(), rs[0].throughput()))
	}
	return withLog(b.check(rs...), gw.child)
}

// withLog adds the tail of a child's log to a scenario's error.
func withLog(err error, c *child) error {
	if err == nil {
		return nil
	}
	l := c.logs.String()
	if len(l) > 2000 {
		l = l[len(l)-2000:]
	}
	return fmt.Errorf("%w\n%s log (tail):\n%s", err, c.name, l)
}

// listPages lists every page of tools/list, returning each page's latency and the number of tools.
func listPages(c *mcpClient) ([]time.Duration, int, error) {
	var lats []time.Duration
	tools, cursor := 0, ""
	for {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `}`
		}
		t0 := time.Now()
		res, _, err := c.request("tools/list", params)
		lats = append(lats, time.Since(t0))
		if err != nil {
			return lats, tools, err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return lats, tools, fmt.Errorf("tools/list: %v", err)
		}
		tools += len(page.Tools)
		if page.NextCursor == "" {
			return lats, tools, nil
		}
		cursor = page.NextCursor
		if len(lats) > 100000 {
			return lats, tools, errors.New("tools/list: no end to the pages")
		}
	}
}

func pctOf(lats []time.Duration, p float64) time.Duration {
	return loadResult{lat: lats}.pct(p)
}

// catalogScenario: catUpstreams upstreams of catTools tools each (one in-process server behind as many paths),
// the merged catalog listed page by page.
func (b *bench) catalogScenario() error {
	b.logf("catalog: %d upstreams × %d tools", b.catUpstreams, b.catTools)
	up, err := startChild("catalog upstream", true, b.self, "upstream", "-http", "127.0.0.1:0", "-tools", strconv.Itoa(b.catTools))
	if err != nil {
		return err
	}
	defer up.stop()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "pageSize: %d\nupstreams:\n", b.pageSize)
	for i := range b.catUpstreams {
		fmt.Fprintf(&cfg, "  - {name: u%03d, url: \"http://%s/u/%03d/mcp\", session: shared}\n", i, up.addr, i)
	}
	t0 := time.Now()
	gw, err := b.startGateway("catalog", cfg.String())
	if err != nil {
		return err
	}
	defer gw.stop()
	ready := time.Since(t0)
	// Startup work still running after /readyz (the catalog rebuilds) is shown apart from the listing's cost.
	settle0 := sample(gw.pid())
	time.Sleep(2 * time.Second)
	settle1 := sample(gw.pid())
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()

	// Direct, for reference: one upstream's whole list in one answer.
	dc := &mcpClient{hc: hc, url: "http://" + up.addr + "/u/000/mcp"}
	if err := dc.initialize(); err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	var direct []time.Duration
	for range max(b.passes*5, 10) {
		l, n, err := listPages(dc)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		if n != b.catTools {
			return fmt.Errorf("direct: %d tools, want %d", n, b.catTools)
		}
		direct = append(direct, l...)
	}
	dc.close()
	slices.Sort(direct)

	c := &mcpClient{hc: hc, url: gw.url}
	if err := c.initialize(); err != nil {
		return err
	}
	defer c.close()
	want := b.catUpstreams * b.catTools
	cpu0 := sample(gw.pid())
	var pages []time.Duration
	for p := range b.passes {
		l, n, err := listPages(c)
		if err != nil {
			return err
		}
		if n != want {
			return fmt.Errorf("pass %d: the catalog has %d tools, want %d", p, n, want)
		}
		pages = append(pages, l...)
	}
	cpu1 := sample(gw.pid())
	slices.Sort(pages)
	fmt.Fprintf(b.out, "\n## Catalog: %d upstreams × %d tools = %d tools, pageSize %d\n\n", b.catUpstreams, b.catTools, want, b.pageSize)
	fmt.Fprintf(b.out, "Gateway ready (GET /readyz 200) %.2f s after start, having used %.2f CPU s by then; %.2f CPU s more in the 2 s after. "+
		"RSS after the listing %.1f MiB. The whole catalog listed %d times, one page per request.\n\n",
		ready.Seconds(), settle0.cpu, settle1.cpu-settle0.cpu, float64(cpu1.rss)/1024, b.passes)
	fmt.Fprintf(b.out, "| what | requests | p50 µs | p90 µs | p99 µs | max µs | gateway CPU µs/page |\n|---|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(b.out, "| gateway tools/list page (%d tools) | %d | %s | %s | %s | %s | %.0f |\n", b.pageSize, len(pages),
		us(pctOf(pages, .5)), us(pctOf(pages, .9)), us(pctOf(pages, .99)), us(pctOf(pages, 1)), (cpu1.cpu-cpu0.cpu)/float64(len(pages))*1e6)
	fmt.Fprintf(b.out, "| direct tools/list, one upstream (%d tools) | %d | %s | %s | %s | %s | – |\n", b.catTools, len(direct),
		us(pctOf(direct, .5)), us(pctOf(direct, .9)), us(pctOf(direct, .99)), us(pctOf(direct, 1)))
	return nil
}

// idleScenario: idleSessions sessions opened (initialize, notifications/initialized) and left idle; the gateway's
// RSS growth.
func (b *bench) idleScenario() error {
	b.logf("idle: %d sessions", b.idleSessions)
	up, err := startChild("upstream", true, b.self, "upstream", "-http", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer up.stop()
	upURL := "http://" + up.addr + "/mcp"
	gw, err := b.startGateway("idle", fmt.Sprintf(`upstreams:
  - {name: pc, url: %q, session: per-client}
  - {name: sh, url: %q, session: shared}
`, upURL, upURL))
	if err != nil {
		return err
	}
	defer gw.stop()
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	var errs errorSink
	// Warm the gateway (connections, first allocations) before the baseline.
	_ = connectAll(hc, gw.url, 32, &errs)
	time.Sleep(500 * time.Millisecond)
	before := sample(gw.pid())
	resetPeak(gw.pid())
	t0 := time.Now()
	var wg sync.WaitGroup
	per := (b.idleSessions + 31) / 32
	for w := range 32 {
		n := min(per, b.idleSessions-w*per)
		if n <= 0 {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				c := &mcpClient{hc: hc, url: gw.url}
				if err := c.initialize(); err != nil {
					errs.add(err)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	time.Sleep(time.Second)
	after := sample(gw.pid())
	sessions, err := gw.sessions(context.Background())
	if err != nil {
		errs.add(err)
	}
	if want := b.idleSessions + 32; errs.n == 0 && sessions < want {
		errs.add(fmt.Errorf("the gateway reports %d sessions, want %d", sessions, want))
	}
	grow := after.rss - before.rss
	fmt.Fprintf(b.out, "\n## Idle sessions\n\n| sessions | opened in | sessions/s | RSS before MiB | RSS after MiB | peak RSS MiB | growth MiB | per session KiB | gateway CPU µs/session | errors |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(b.out, "| %d | %.2f s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %d |\n", b.idleSessions, took.Seconds(), float64(b.idleSessions)/took.Seconds(),
		float64(before.rss)/1024, float64(after.rss)/1024, float64(after.hwm)/1024, float64(grow)/1024, float64(grow)/float64(b.idleSessions),
		(after.cpu-before.cpu)/float64(b.idleSessions)*1e6, errs.n)
	if errs.n > 0 {
		return fmt.Errorf("%d errors: %s", errs.n, strings.Join(errs.msgs, " | "))
	}
	return nil
}

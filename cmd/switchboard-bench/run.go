package main

// The scenarios and the report.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
)

// envChild marks a process started by the tool; the test binary uses it to act as the tool's children.
const envChild = "SWITCHBOARD_BENCH_CHILD"

type bench struct {
	self, gateway string
	baseline      string // -baseline: an earlier switchboard binary, measured beside gateway; "" for none
	dir           string
	out           io.Writer // the report
	progress      io.Writer
	failed        []string // scenarios with errors

	short                                    bool
	clients, stdioClients                    []int
	duration, warm                           time.Duration
	catUpstreams, catTools, pageSize, passes int
	idleSessions                             int
	replicaClients                           []int // concurrencies of the replicas scenario; the kill test runs the largest
	coldUpstreams, coldTools, coldRounds     int
	profileDir, profileScenario              string
	searchTools                              []int // tool counts of the search scenario's scale runs
	searchPasses, searchBuilds, searchWiths  int
	embeddings                               hybrid.Config // -search-embeddings: hybrid search's provider; no URL for none
	scenarios                                []string
	needGateway                              bool                    // a scenario other than search
	pin                                      cpuPin                  // -pin's placement (pin.go); its zero value without -pin
	peer                                     peerBinary              // -mcp-proxy's binary; no path for none
	rounds, round                            int                     // -rounds of the load and stdio scenarios, and the one running
	loadRuns, stdioRuns                      []map[string]loadResult // each round's results by target and clients
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	b, opts, code := newBench(args, stderr)
	if b == nil {
		return code
	}
	var err error
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
	b.gateway = opts.gateway
	if b.gateway == "" && b.needGateway {
		fmt.Fprintln(stderr, "building ./cmd/switchboard ...")
		if b.gateway, err = buildGateway(b.dir); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if opts.peer != noPeer && (slices.Contains(b.scenarios, "load") || slices.Contains(b.scenarios, "stdio")) {
		fmt.Fprintf(stderr, "building the peer, %s ...\n", opts.peer)
		if b.peer, err = buildPeer(b.dir, opts.peer); err != nil {
			fmt.Fprintln(stderr, "-mcp-proxy:", err)
			return 1
		}
	}
	if opts.pin { // after the build, which should have every CPU
		placed, restore, err := setupPin()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		b.pin = placed
		defer func() {
			if err := restore(); err != nil {
				fmt.Fprintln(stderr, err)
			}
		}()
	}
	report := b.run()
	fmt.Fprint(stdout, report)
	if opts.outFile != "" {
		if err := os.WriteFile(opts.outFile, []byte(report), 0o644); err != nil {
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

// run runs the scenarios and returns the report.
func (b *bench) run() string {
	var report strings.Builder
	b.out = &report
	b.machine()
	for _, s := range b.scenarios {
		var err error
		switch s {
		case "load", "stdio":
			err = b.inRounds(s)
		case "catalog":
			err = b.catalogScenario()
		case "idle":
			err = b.idleScenario()
		case "replicas":
			err = b.replicasScenario()
		case "cold":
			err = b.coldScenario()
		case "search":
			err = b.searchScenario()
		}
		if err != nil {
			b.failed = append(b.failed, fmt.Sprintf("%s: %v", s, err))
			fmt.Fprintf(&report, "\n**%s failed**: %v\n", s, err)
		}
	}
	if b.rounds > 1 {
		roundsSummary(b.out, b.clients, b.stdioClients, b.peer.label, b.loadRuns, b.stdioRuns)
	}
	return report.String()
}

// inRounds runs the load or the stdio scenario -rounds times, each round a whole interleaved pass with its own
// processes, its targets in an order turned by one each round, so that no target always runs first or last.
func (b *bench) inRounds(scenario string) error {
	for b.round = 0; b.round < max(b.rounds, 1); b.round++ {
		if b.rounds > 1 {
			fmt.Fprintf(b.out, "\n# %s, round %d of %d\n", scenario, b.round+1, b.rounds)
			b.logf("%s: round %d of %d", scenario, b.round+1, b.rounds)
		}
		var err error
		if scenario == "load" {
			err = b.loadScenario()
		} else {
			err = b.stdioScenario()
		}
		if err != nil {
			return fmt.Errorf("round %d: %w", b.round+1, err)
		}
	}
	return nil
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
	if slices.Contains(b.scenarios, "stdio") {
		settings = append(settings, fmt.Sprintf("stdio: clients %v", b.stdioClients))
	}
	if b.rounds > 1 {
		settings = append(settings, fmt.Sprintf("load and stdio: %d rounds, the targets' order turned by one each round", b.rounds))
	}
	if b.peer.path != "" {
		settings = append(settings, "the real peer: "+b.peer.label)
	}
	if slices.Contains(b.scenarios, "replicas") {
		settings = append(settings, fmt.Sprintf("replicas: clients %v", b.replicaClients))
	}
	if slices.Contains(b.scenarios, "cold") {
		settings = append(settings, fmt.Sprintf("cold: %d upstreams × %d tools, %d rounds", b.coldUpstreams, b.coldTools, b.coldRounds))
	}
	if slices.Contains(b.scenarios, "search") {
		settings = append(settings, fmt.Sprintf("search: tools %v, %d passes, %d builds, %d updates", b.searchTools, b.searchPasses, b.searchBuilds, b.searchWiths))
	}
	if b.pin.taskset != "" {
		settings = append(settings, fmt.Sprintf("pinned: this tool, its clients and the upstreams on CPUs %s; the proxy, the bridge, the peer and the gateways on CPUs %s",
			cpuArg(b.pin.toolCPUs), cpuArg(b.pin.middleCPUs)))
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
	withDials := slices.ContainsFunc(rs, func(r loadResult) bool { return r.hasDials })
	dh, dl := "", ""
	if withDials {
		dh, dl = " upstream dials /1000 calls |", "---:|"
	}
	fmt.Fprintf(b.out, "\n| clients | target | calls/s | p50 µs | p90 µs | p99 µs | max µs | errors | middle CPU s | middle CPU µs/call | middle peak RSS MiB | upstream CPU µs/call |%s\n", dh)
	fmt.Fprintf(b.out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", dl)
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
		if r.hasUp && r.calls > 0 {
			up = fmt.Sprintf("%.1f", r.upCPU/float64(r.calls)*1e6)
		}
		dials := ""
		if withDials {
			dials = " – |"
			if r.hasDials && r.calls > 0 {
				dials = fmt.Sprintf(" %.1f |", float64(r.dials)/float64(r.calls)*1000)
			}
		}
		fmt.Fprintf(b.out, "| %d | %s | %.0f | %s | %s | %s | %s | %d | %s | %s | %s | %s |%s\n", r.clients, r.target, r.throughput(),
			us(r.pct(0.5)), us(r.pct(0.9)), us(r.pct(0.99)), us(r.max()), r.errs, cpu, per, rss, up, dials)
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
	pxArgs := []string{"proxy", "-target", "http://" + up.addr}
	if b.profileDir != "" && b.profileScenario == "load" {
		pxArgs = append(pxArgs, "-cpuprofile", filepath.Join(b.profileDir, "proxy-load.cpu.pprof"))
	}
	pxBin, pxArgs := b.pin.middleCommand(b.self, pxArgs...)
	px, err := startChild("proxy", true, pxBin, pxArgs...)
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
	bare, err := b.startGateway("load"+bareSuffix, fmt.Sprintf(`upstreams:
  - {name: pc, url: %q, session: per-client}
`, upURL))
	if err != nil {
		return err
	}
	defer bare.stop()

	const args = `"arguments":{"text":"hello from switchboard-bench"}}`
	type target struct {
		name, url, params string
		mid               *child
	}
	targets := []target{
		{directName, upURL, `{"name":"echo",` + args, nil},
		{proxyName, "http://" + px.addr + "/mcp", `{"name":"echo",` + args, px},
		{perClientName, gw.url, `{"name":"pc__echo",` + args, gw.child},
		{sharedName, gw.url, `{"name":"sh__echo",` + args, gw.child},
		{bareName, bare.url, `{"name":"pc__echo",` + args, bare.child},
	}
	if b.peer.path != "" {
		// One upstream session for every client, as mcp-proxy keeps one client per server.
		pr, err := b.peer.start(b.dir, b.pin, "pc", peerServer{URL: upURL, TransportType: "streamable-http"})
		if err != nil {
			return err
		}
		defer pr.stop()
		targets = append(targets, target{b.peer.label, pr.url, `{"name":"echo",` + args, pr.child})
	}
	if b.baseline != "" {
		base, err := b.startGateway("load"+baselineSuffix, fmt.Sprintf("upstreams:\n  - {name: pc, url: %q, session: per-client}\n", upURL))
		if err != nil {
			return err
		}
		defer base.stop()
		targets = append(targets, target{baselineName, base.url, `{"name":"pc__echo",` + args, base.child})
	}
	var all []loadResult
	byKey := map[string]loadResult{}
	for _, n := range b.clients {
		for _, t := range rotate(targets, b.round) {
			b.logf("load: %s, %d clients", t.name, n)
			acc := &acceptMeter{base: "http://" + up.addr}
			spec := loadSpec{target: t.name, url: t.url, params: t.params, clients: n, warm: b.warm, dur: b.duration,
				ups: []int{up.pid()}, meters: []meter{acc}}
			if t.mid != nil {
				spec.mids = []int{t.mid.pid()}
			}
			r := spec.run()
			r.dials, r.hasDials = acc.dials()
			all = append(all, r)
			byKey[fmt.Sprint(t.name, n)] = r
		}
	}
	fmt.Fprintf(b.out, "\n## Load: tools/call echo on a fast upstream (Go SDK, streamable HTTP, stateful)\n")
	fmt.Fprintf(b.out, "\nEach client: its own session (initialize, notifications/initialized), then tools/call in a closed loop. "+
		"\"Middle\" is the process between client and upstream (proxy or gateway); its CPU is utime+stime over the measured window. "+
		"Upstream dials are the TCP connections the upstream accepted in the measured window (a counting listener), per 1,000 calls. "+
		"The bare gateway is this tool's own (`switchboard-bench gateway`): the same routing and gateway code as switchboard serve, wired with the config's upstreams and timeouts only "+
		"(no metrics, audit, pinning, gateway-held tasks, trace-context headers or shape): the forwarding path alone.\n")
	b.resultTable(all)
	fmt.Fprintf(b.out, "\n### Ratios (same run)\n\n| clients | gw/direct calls/s | gw/proxy calls/s | proxy/direct calls/s | proxy added p50 µs | gw added p50 µs | gw/proxy added p50 | gw shared/proxy calls/s | gw shared added p50 µs | gw CPU µs/msg | bare/proxy calls/s | bare added p50 µs | bare/proxy added p50 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range b.clients {
		d, p, g, s := byKey[fmt.Sprint(directName, n)], byKey[fmt.Sprint(proxyName, n)], byKey[fmt.Sprint(perClientName, n)], byKey[fmt.Sprint(sharedName, n)]
		bg := byKey[fmt.Sprint(bareName, n)]
		pa, ga, sa, ba := p.pct(.5)-d.pct(.5), g.pct(.5)-d.pct(.5), s.pct(.5)-d.pct(.5), bg.pct(.5)-d.pct(.5)
		perMsg := "–"
		if g.calls > 0 {
			perMsg = fmt.Sprintf("%.1f", g.midCPU/float64(2*g.calls)*1e6)
		}
		fmt.Fprintf(b.out, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n,
			ratio(g.throughput(), d.throughput()), ratio(g.throughput(), p.throughput()), ratio(p.throughput(), d.throughput()),
			us(pa), us(ga), ratio(float64(ga), float64(pa)), ratio(s.throughput(), p.throughput()), us(sa), perMsg,
			ratio(bg.throughput(), p.throughput()), us(ba), ratio(float64(ba), float64(pa)))
	}
	fmt.Fprintf(b.out, "\n(gw = switchboard per-client; a message is a request or a response, two per call.)\n")
	if b.peer.path != "" {
		peerLoadTable(b.out, b.peer.label, b.clients, byKey)
	}
	b.cpuTable(byKey)
	b.loadRuns = append(b.loadRuns, byKey)
	return withLog(withLog(b.check(all...), gw.child), bare.child)
}

// stdioScenario: one stdio upstream shared by every client, 1 client vs many, against a simple stdio-to-HTTP
// bridge on the same fixture (the comparator of issue 20), interleaved at each concurrency.
func (b *bench) stdioScenario() error {
	b.logf("stdio: starting gateways and bridge")
	// The fixture speaks both eras. Shared, the gateway picks the legacy one by default (protocol: auto, see
	// upstream.ProtocolAuto), as the bridge does; two more gateways are told the era, so that the run shows
	// what each costs.
	const upstreamCfg = `upstreams:
  - {name: solo, command: %q, args: [upstream], session: shared, protocol: %s, prefix: "", envPassthrough: [%s]}
`
	gws := make([]*gatewayProc, 0, 3)
	defer func() {
		for _, g := range gws {
			g.stop()
		}
	}()
	for _, era := range []string{"auto", "legacy", "modern"} {
		name := "stdio" // the default's name, which -profile-scenario stdio profiles
		if era != "auto" {
			name += "-" + era
		}
		g, err := b.startGateway(name, fmt.Sprintf(upstreamCfg, b.self, era, envChild)) // the child is this binary, told by envChild to act as an upstream
		if err != nil {
			return err
		}
		gws = append(gws, g)
	}
	gw, gwl, gwm := gws[0], gws[1], gws[2]
	type target struct {
		name, url string
		mid       int
		ups       []int
	}
	var extra []target // -baseline's default, beside the others
	if b.baseline != "" {
		g, err := b.startGateway("stdio"+baselineSuffix, fmt.Sprintf(upstreamCfg, b.self, "auto", envChild))
		if err != nil {
			return err
		}
		gws = append(gws, g)
		extra = append(extra, target{"baseline, shared stdio", g.url, g.pid(), childrenOf(g.pid())})
	}
	brBin, brArgs := b.pin.middleCommand(b.self, "stdiobridge")
	br, err := startChild("stdio bridge", true, brBin, brArgs...)
	if err != nil {
		return err
	}
	defer br.stop()
	if b.peer.path != "" {
		pr, err := b.peer.start(b.dir, b.pin, "solo", peerServer{Command: b.self, Args: []string{"upstream"}}) // envChild is inherited
		if err != nil {
			return err
		}
		defer pr.stop()
		extra = append(extra, target{peerStdioName(b.peer.label), pr.url, pr.pid(), childrenOf(pr.pid())})
	}
	// Each one's stdio child, whose CPU is the upstream's.
	gwUp, gwlUp, gwmUp, brUp := childrenOf(gw.pid()), childrenOf(gwl.pid()), childrenOf(gwm.pid()), childrenOf(br.pid())
	const params = `{"name":"echo","arguments":{"text":"hello from switchboard-bench"}}`
	var rs []loadResult
	byKey := map[string]loadResult{}
	for _, n := range b.stdioClients {
		for _, t := range rotate(append([]target{{gwName, gw.url, gw.pid(), gwUp}, {gwlName, gwl.url, gwl.pid(), gwlUp},
			{gwmName, gwm.url, gwm.pid(), gwmUp}, {brName, "http://" + br.addr + "/mcp", br.pid(), brUp}}, extra...), b.round) {
			b.logf("stdio: %s, %d clients", t.name, n)
			r := loadSpec{target: t.name, url: t.url, params: params, clients: n, warm: b.warm, dur: b.duration,
				mids: []int{t.mid}, ups: t.ups}.run()
			rs = append(rs, r)
			byKey[fmt.Sprint(t.name, n)] = r
		}
	}
	fmt.Fprintf(b.out, "\n## Shared stdio upstream\n\nOne stdio child (the same Go SDK server, `session: shared`) behind the gateway; every client calls echo through it. "+
		"The gateway speaks the legacy era to it by default (`protocol: auto`: a shared stdio upstream that speaks both eras gets one initialize); two more are told the era: `protocol: legacy`, and `protocol: modern` (every request carries its `_meta`). "+
		"The comparator, in the same run: a simple Go stdio-to-HTTP bridge (`switchboard-bench stdiobridge`) with one child of the same fixture, "+
		"which initializes it once (legacy) and forwards each request with its id rewritten (answers matched by id, JSON answers), "+
		"with no aggregation, progress or cancellation. \"Middle\" is the gateway or the bridge; the upstream is its stdio child.\n")
	b.resultTable(rs)
	names := []string{gwName, gwlName, gwmName}
	for _, t := range extra {
		names = append(names, t.name)
	}
	versusTable(b.out, b.stdioClients, "Gateway ÷ simple bridge", brName, names, byKey)
	if b.peer.path != "" {
		peer := peerStdioName(b.peer.label)
		versusTable(b.out, b.stdioClients, "Gateway ÷ "+b.peer.label+", a real peer", peer, slices.DeleteFunc(names, func(n string) bool { return n == peer }), byKey)
	}
	if len(b.stdioClients) > 1 {
		lo, hi := b.stdioClients[0], b.stdioClients[len(b.stdioClients)-1]
		fmt.Fprintf(b.out, "\nThroughput with %d clients / with %d: gateway **%s**, gateway (legacy era) %s, gateway (modern era) %s, bridge %s (≥ 1 means sharing costs nothing).\n", hi, lo,
			ratio(byKey[fmt.Sprint(gwName, hi)].throughput(), byKey[fmt.Sprint(gwName, lo)].throughput()),
			ratio(byKey[fmt.Sprint(gwlName, hi)].throughput(), byKey[fmt.Sprint(gwlName, lo)].throughput()),
			ratio(byKey[fmt.Sprint(gwmName, hi)].throughput(), byKey[fmt.Sprint(gwmName, lo)].throughput()),
			ratio(byKey[fmt.Sprint(brName, hi)].throughput(), byKey[fmt.Sprint(brName, lo)].throughput()))
		if b.peer.path != "" {
			peer := peerStdioName(b.peer.label)
			fmt.Fprintf(b.out, "The peer, %s: %s.\n", b.peer.label, ratio(byKey[fmt.Sprint(peer, hi)].throughput(), byKey[fmt.Sprint(peer, lo)].throughput()))
		}
	}
	b.stdioRuns = append(b.stdioRuns, byKey)
	return withLog(withLog(withLog(withLog(b.check(rs...), gw.child), gwl.child), gwm.child), br)
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

// cpuTable writes the middle's CPU per call of switchboard serve (and -baseline's) against the bare forwarding
// path's at each concurrency: what serve's operability (metrics above all) costs per call, in the same run.
func (b *bench) cpuTable(byKey map[string]loadResult) {
	fmt.Fprintf(b.out, "\n### CPU per call ÷ the bare forwarding path (same run)\n\n| clients | bare µs/call | serve µs/call | serve ÷ bare |")
	if b.baseline != "" {
		fmt.Fprintf(b.out, " baseline µs/call | baseline ÷ bare | serve ÷ baseline |")
	}
	fmt.Fprintf(b.out, "\n|---:|---:|---:|---:|")
	if b.baseline != "" {
		fmt.Fprintf(b.out, "---:|---:|---:|")
	}
	fmt.Fprintln(b.out)
	for _, n := range b.clients {
		bare, g := byKey[fmt.Sprint(bareName, n)], byKey[fmt.Sprint(perClientName, n)]
		bc, gc := perCall(bare.midCPU, bare.calls), perCall(g.midCPU, g.calls)
		fmt.Fprintf(b.out, "| %d | %.1f | %.1f | %s |", n, bc*1e6, gc*1e6, ratio(gc, bc))
		if b.baseline != "" {
			base := byKey[fmt.Sprint(baselineName, n)]
			pc := perCall(base.midCPU, base.calls)
			fmt.Fprintf(b.out, " %.1f | %s | %s |", pc*1e6, ratio(pc, bc), ratio(gc, pc))
		}
		fmt.Fprintln(b.out)
	}
}

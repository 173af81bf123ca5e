package main

// The replicas scenario (issue 20): two gateway replicas sharing one redis-server behind the tool's round-robin
// balancer, against one replica without Redis behind the same balancer, interleaved; then one of the two killed
// mid-run.

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// replicaSecret is the replicas' shared cursorSecret (at least 32 bytes): each must accept the others' cursors
// and requestStates.
const replicaSecret = "switchboard-bench-replicas-cursor-secret-0123456789"

// replicaRun is one target of the comparison at one concurrency.
type replicaRun struct {
	loadResult
	redis, open, closed *redisDelta // over the measured window, the handshakes, the DELETEs; nil without Redis
	split               []int64     // requests each replica answered in the run (handshakes included)
}

func (b *bench) replicasScenario() error {
	b.logf("replicas: starting redis-server, upstream, 7 gateways")
	rd, redisAddr, err := startRedis()
	if errors.Is(err, errNoRedis) {
		b.logf("replicas: skipped: %v", err)
		fmt.Fprintf(b.out, "\n## Replicas\n\nSkipped: %v (install redis-server to run this scenario).\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer rd.stop()
	up, err := startChild("upstream", true, b.self, "upstream", "-http", "127.0.0.1:0", "-tools", "1")
	if err != nil {
		return err
	}
	defer up.stop()
	upURL := "http://" + up.addr + "/mcp"
	ups := fmt.Sprintf("upstreams:\n  - {name: pc, url: %q, session: per-client}\n  - {name: sh, url: %q, session: shared}\n", upURL, upURL)

	// The one replica has the whole machine, at Go's default whatever the tool's own environment says (an empty
	// GOMAXPROCS is no setting).
	const goDefault = "GOMAXPROCS="
	solo, err := b.startGateway("replica-solo", ups, goDefault)
	if err != nil {
		return err
	}
	defer solo.stop()
	// Two replicas sharing one redis-server, and two that share nothing (only usable with affinity). Each is sized
	// to its half of the machine, as on N machines (the Helm chart's goMaxProcs: requests does this on a shared
	// node): two Go schedulers each sized for every core, on those cores, cost CPU per call of their own. Two
	// more on Redis, each sized for the whole machine (Go's default), measure that.
	share := fmt.Sprintf("GOMAXPROCS=%d", max(1, runtime.NumCPU()/2))
	var pair, apart, whole []*gatewayProc
	defer func() {
		for _, g := range slices.Concat(pair, apart, whole) {
			g.stop()
		}
	}()
	if pair, apart, whole, err = b.startReplicas(ups, redisAddr, share, goDefault); err != nil {
		return err
	}
	var lbs []*balancer
	defer func() {
		for _, lb := range lbs {
			lb.close()
		}
	}()
	for _, x := range []struct {
		affinity bool
		gws      []*gatewayProc
	}{{false, []*gatewayProc{solo}}, {false, pair}, {true, pair}, {true, apart}, {false, whole}} {
		var bases []string
		for _, g := range x.gws {
			bases = append(bases, g.base)
		}
		lb, err := newBalancer(x.affinity, bases...)
		if err != nil {
			return err
		}
		lbs = append(lbs, lb)
	}
	lbSolo, lbPair, lbSticky, lbApart, lbWhole := lbs[0], lbs[1], lbs[2], lbs[3], lbs[4]

	// The per-client upstream: each client's upstream session is one more thing the replicas share (a replica
	// resumes the session another opened, from its record).
	const params = `{"name":"pc__echo","arguments":{"text":"hello from switchboard-bench"}}`
	const soloName, pairName, stickyName, apartName = "1 replica, no Redis", "2 replicas + Redis", "2 replicas + Redis, session affinity", "2 replicas, no Redis, session affinity"
	const wholeName = "2 replicas + Redis, each GOMAXPROCS = all cores"
	var runs []replicaRun
	var errs []error
	for _, n := range b.replicaClients {
		for _, t := range []struct {
			name string
			lb   *balancer
			gws  []*gatewayProc
		}{{soloName, lbSolo, []*gatewayProc{solo}}, {pairName, lbPair, pair}, {stickyName, lbSticky, pair}, {apartName, lbApart, apart}, {wholeName, lbWhole, whole}} {
			b.logf("replicas: %s, %d clients", t.name, n)
			shared := t.gws[0] != solo && t.gws[0] != apart[0]
			run, runErrs := b.replicaMeasure(t.name, t.lb, t.gws, n, up, redisAddr, shared, params)
			errs = append(errs, runErrs...)
			runs = append(runs, run)
		}
	}
	b.replicasReport(runs)
	var rs []loadResult
	for _, r := range runs {
		rs = append(rs, r.loadResult)
	}
	if err := b.check(rs...); err != nil {
		err = withLog(withLog(withLog(err, solo.child), pair[0].child), pair[1].child)
		errs = append(errs, withLog(withLog(err, whole[0].child), whole[1].child))
	}

	n := slices.Max(b.replicaClients)
	b.logf("replicas: kill test, %d clients", n)
	k := b.killRun(lbPair, pair[0], pair[1], params, n)
	b.killReport(k)
	if err := k.err(); err != nil {
		errs = append(errs, withLog(err, pair[1].child))
	}
	return errors.Join(errs...)
}

// startReplicas starts the six gateways the replicas scenario compares beside its solo one: a pair on Redis sized
// to half the machine each (share), a pair apart (no Redis) sized alike, and a pair on Redis each sized for the
// whole machine (goDefault). It returns those it started, also when one fails to, for the caller to stop.
func (b *bench) startReplicas(ups, redisAddr, share, goDefault string) (pair, apart, whole []*gatewayProc, err error) {
	for _, name := range []string{"replica-a", "replica-b", "apart-a", "apart-b", "whole-a", "whole-b"} {
		addr, err := freePort()
		if err != nil {
			return pair, apart, whole, err
		}
		cfg, env := ups, []string{share}
		if !strings.HasPrefix(name, "apart") {
			cfg = fmt.Sprintf("cursorSecret: %q\nredis: {url: \"redis://%s\"}\nreplicaURL: %q\n%s", replicaSecret, redisAddr, "http://"+addr+"/mcp", ups)
		}
		if strings.HasPrefix(name, "whole") {
			env = []string{goDefault}
		}
		g, err := b.launchGateway(name, addr, cfg, env...)
		if err != nil {
			return pair, apart, whole, err
		}
		switch {
		case strings.HasPrefix(name, "replica"):
			pair = append(pair, g)
		case strings.HasPrefix(name, "apart"):
			apart = append(apart, g)
		default:
			whole = append(whole, g)
		}
		if err := g.waitReady(50 * time.Millisecond); err != nil {
			return pair, apart, whole, err
		}
	}
	return pair, apart, whole, nil
}

// replicaMeasure runs the load of n clients through lb to the gateways gws, with the upstream's dials and, when
// the gateways share Redis, its work during the run and while sessions open and close. Redis's meters failing
// are errors beside the run.
func (b *bench) replicaMeasure(name string, lb *balancer, gws []*gatewayProc, n int, up *child, redisAddr string, shared bool, params string) (replicaRun, []error) {
	acc := &acceptMeter{base: "http://" + up.addr}
	spec := loadSpec{target: name, url: lb.url, params: params, clients: n, warm: b.warm, dur: b.duration,
		ups: []int{up.pid()}, meters: []meter{acc}}
	for _, g := range gws {
		spec.mids = append(spec.mids, g.pid())
	}
	var rm, ro, rc *redisMeter
	if shared {
		rm, ro, rc = &redisMeter{addr: redisAddr}, &redisMeter{addr: redisAddr}, &redisMeter{addr: redisAddr}
		spec.meters = append(spec.meters, rm)
		spec.openMeters, spec.closeMeters = []meter{ro}, []meter{rc}
	}
	before := lb.servedCounts()
	run := replicaRun{loadResult: spec.run()}
	run.dials, run.hasDials = acc.dials()
	for i, c := range lb.servedCounts() {
		run.split = append(run.split, c-before[i])
	}
	var errs []error
	if rm != nil {
		for _, x := range []struct {
			m  *redisMeter
			to **redisDelta
		}{{rm, &run.redis}, {ro, &run.open}, {rc, &run.closed}} {
			d, err := x.m.delta()
			if err != nil {
				errs = append(errs, fmt.Errorf("redis INFO: %w", err))
				continue
			}
			*x.to = &d
		}
	}
	return run, errs
}

func (b *bench) replicasReport(runs []replicaRun) {
	fmt.Fprintf(b.out, "\n## Replicas: 2 gateways on one redis-server behind a round-robin balancer\n\n"+
		"Two `switchboard serve` replicas with `redis:` (one local `redis-server`, no persistence), a shared `cursorSecret` and each "+
		"its own `replicaURL`, behind the tool's balancer (in the tool's process: round robin per request, no stickiness, "+
		"so a session's calls alternate between the replicas). Against them, interleaved at each concurrency: one replica "+
		"without Redis behind the same balancer (one backend); the same two replicas behind a balancer with `Mcp-Session-Id` "+
		"affinity (a session's requests go to the replica that answered its initialize), which tells what alternating costs; "+
		"and two replicas without Redis, sharing nothing, behind such a balancer, which tells what a second process costs without shared state. "+
		"Each replica of these pairs runs with `GOMAXPROCS` set to its half of the machine's cores, as it would on a machine of its own "+
		"(the Helm chart's `goMaxProcs: requests` does the same for replicas packed on one node), while the one replica without Redis "+
		"has the whole machine at Go's default; the last target is two more "+
		"replicas on Redis left to Go's default, each sized for every core, round robin: what two schedulers sized for the whole machine cost on it. Clients are legacy (2025-11-25) sessions calling `tools/call` "+
		"on a per-client HTTP upstream (each client's upstream session is shared by the replicas through its record). "+
		"Gateway CPU is the sum of the replicas' utime+stime over the measured window; Redis figures are deltas of "+
		"`INFO all` over the same window (commands from commandstats, INFO left out; round trips are `total_reads_processed`, "+
		"read events, one per request or pipelined batch).\n")
	fmt.Fprintf(b.out, "\n| clients | target | calls/s | p50 µs | p90 µs | p99 µs | errors | gateway CPU s | gateway CPU µs/call | calls per gateway CPU s | gateway peak RSS MiB | Redis commands/call | Redis round trips/call | Redis CPU µs/call | Redis bytes/call | upstream dials /1000 calls | requests per replica |\n")
	fmt.Fprintf(b.out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range runs {
		cmds, rts, rcpu, rbytes := "–", "–", "–", "–"
		if r.redis != nil && r.calls > 0 {
			c := float64(r.calls)
			cmds = fmt.Sprintf("%.2f", float64(r.redis.total)/c)
			rts = fmt.Sprintf("%.2f", float64(r.redis.reads)/c)
			rcpu = fmt.Sprintf("%.1f", r.redis.cpu/c*1e6)
			rbytes = fmt.Sprintf("%.0f", float64(r.redis.netIn+r.redis.netOut)/c)
		}
		perCPU := "–"
		if r.midCPU > 0 {
			perCPU = fmt.Sprintf("%.0f", float64(r.calls)/r.midCPU)
		}
		dials := "–"
		if r.hasDials && r.calls > 0 {
			dials = fmt.Sprintf("%.1f", float64(r.dials)/float64(r.calls)*1000)
		}
		split := make([]string, len(r.split))
		for i, s := range r.split {
			split[i] = fmt.Sprint(s)
		}
		fmt.Fprintf(b.out, "| %d | %s | %.0f | %s | %s | %s | %d | %.2f | %.1f | %s | %.1f | %s | %s | %s | %s | %s | %s |\n",
			r.clients, r.target, r.throughput(), us(r.pct(.5)), us(r.pct(.9)), us(r.pct(.99)), r.errs, r.midCPU,
			perCall(r.midCPU, r.calls)*1e6, perCPU, float64(r.midPeakKiB)/1024, cmds, rts, rcpu, rbytes, dials, strings.Join(split, " / "))
	}
	fmt.Fprintf(b.out, "\n### Each ÷ 1 replica without Redis (same run)\n\n| clients | target | calls/s | calls per gateway CPU s | gateway CPU per call | added p50 µs | Redis commands in the window: count (per call) |\n|---:|---|---:|---:|---:|---:|---|\n")
	const per = 5 // targets per concurrency, the first the baseline
	for i := 0; i+per <= len(runs); i += per {
		s := runs[i]
		for _, p := range runs[i+1 : i+per] {
			mix := "–"
			if p.redis != nil {
				mix = p.redis.top(p.calls)
			}
			fmt.Fprintf(b.out, "| %d | %s | %s | %s | %s | %s | %s |\n", s.clients, p.target, ratio(p.throughput(), s.throughput()),
				ratio(perCallInv(p), perCallInv(s)), ratio(perCall(p.midCPU, p.calls), perCall(s.midCPU, s.calls)), us(p.pct(.5)-s.pct(.5)), mix)
		}
	}
	fmt.Fprintf(b.out, "\nRedis per session, 2 replicas (outside the measured window): opened = `initialize` + `notifications/initialized` "+
		"(round robin: when the second lands on the other replica, that one restores the session from its record, one `HGETALL`; "+
		"a session whose two land on one replica is restored in its first calls, in the warm-up, outside both windows; "+
		"with affinity both land on the same replica); ended = `DELETE`.\n\n"+
		"| clients | target | sessions | opened: commands/session | opened: round trips/session | opened: Redis CPU µs/session | opened: commands (per session) | ended: commands/session | ended: round trips/session | ended: Redis CPU µs/session | ended: commands (per session) |\n|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, r := range runs {
		if r.open == nil || r.closed == nil || r.clients == 0 {
			continue
		}
		n := float64(r.clients)
		fmt.Fprintf(b.out, "| %d | %s | %d | %.1f | %.1f | %.0f | %s | %.1f | %.1f | %.0f | %s |\n", r.clients, r.target, r.clients,
			float64(r.open.total)/n, float64(r.open.reads)/n, r.open.cpu/n*1e6, r.open.top(r.clients),
			float64(r.closed.total)/n, float64(r.closed.reads)/n, r.closed.cpu/n*1e6, r.closed.top(r.clients))
	}
}

// perCallInv is calls per CPU second of the processes in the middle.
func perCallInv(r replicaRun) float64 {
	if r.midCPU == 0 {
		return 0
	}
	return float64(r.calls) / r.midCPU
}

// killCall is one call of the kill test.
type killCall struct {
	t0, t1 time.Time
	err    error
}

// killResult is what the kill test saw.
type killResult struct {
	sessions           int
	handshakeErrs      []string
	start, end         time.Time
	kill, dead         time.Time    // SIGKILL sent; the process reaped (its sockets closed)
	calls              [][]killCall // per session
	downAt             time.Time    // when the balancer marked the killed replica down (zero: never)
	resent             int64
	splitAfter         []int64 // requests each replica answered after the kill
	survivorExited     bool
	survivorExitReason string
}

// killRun has n sessions call through the pair's balancer; halfway through the measured time it kills victim
// (SIGKILL, its process group) and the clients go on until the end.
func (b *bench) killRun(lb *balancer, victim, survivor *gatewayProc, params string, n int) killResult {
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	var hs errorSink
	cs := connectAll(hc, lb.url, n, &hs)
	k := killResult{sessions: len(cs), handshakeErrs: hs.msgs, calls: make([][]killCall, len(cs))}
	k.start = time.Now()
	k.end = k.start.Add(b.warm + b.duration)
	killAt := k.start.Add(b.warm + b.duration/2)
	var splitAtKill []int64
	var killed sync.WaitGroup
	killed.Add(1)
	go func() {
		defer killed.Done()
		time.Sleep(time.Until(killAt))
		splitAtKill = lb.servedCounts()
		k.kill = time.Now()
		_ = syscall.Kill(-victim.pid(), syscall.SIGKILL)
		<-victim.done // reaped by its waiter: gone, every socket of it closed
		k.dead = time.Now()
	}()
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []killCall
			for {
				t0 := time.Now()
				if !t0.Before(k.end) {
					break
				}
				err := c.callTool(params)
				mine = append(mine, killCall{t0: t0, t1: time.Now(), err: err})
				if err != nil {
					time.Sleep(10 * time.Millisecond) // a failing target must not turn into a busy loop
				}
			}
			k.calls[i] = mine
		}()
	}
	wg.Wait()
	killed.Wait()
	for _, c := range cs {
		c.close()
	}
	if at := lb.backends[0].downAt.Load(); at != 0 {
		k.downAt = time.Unix(0, at)
	}
	k.resent = lb.resent.Load()
	for i, c := range lb.servedCounts() {
		k.splitAfter = append(k.splitAfter, c-splitAtKill[i])
	}
	if survivor.exited() {
		k.survivorExited, k.survivorExitReason = true, fmt.Sprint(survivor.err)
	}
	return k
}

// killSummary classifies the kill test's calls and sessions.
type killSummary struct {
	before, after  int // successful calls started before the kill and after it
	failedBefore   int // failed, and ended before the kill: no replica was dying then
	failedDying    int // failed, started before the killed replica was reaped (in flight on it, or sent to it as it died)
	failedAfter    int // failed, started after it was reaped
	failedGateway  int // of the failures, answered by a gateway (a JSON-RPC error or an HTTP status of its own)
	continued      int // sessions with a successful call after the kill
	lost           int // sessions without
	hit            int // sessions that saw a failed call
	recovered      time.Duration
	msgs           map[string]int
	gatewayAnswers []string
}

// fromBalancer tells a failure the balancer reported (the replica's connection broke: 502 "balancer: ...") or the
// client saw as a cut stream, from an answer of a gateway.
func fromBalancer(err error) bool {
	m := err.Error()
	return strings.Contains(m, "HTTP 502: balancer:") || strings.Contains(m, "SSE stream ended without the answer") ||
		strings.Contains(m, "EOF") || strings.Contains(m, "connection reset")
}

func (k killResult) summary() killSummary {
	s := killSummary{msgs: map[string]int{}}
	for _, calls := range k.calls {
		okAfter, failed := false, false
		for _, c := range calls {
			if c.err == nil {
				if c.t0.Before(k.kill) {
					s.before++
				} else {
					s.after++
					if !okAfter {
						okAfter = true
						if failed {
							s.recovered = max(s.recovered, c.t1.Sub(k.kill))
						}
					}
				}
				continue
			}
			failed = true
			msg := c.err.Error()
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			s.msgs[msg]++
			switch {
			case c.t1.Before(k.kill):
				s.failedBefore++
			case c.t0.Before(k.dead):
				s.failedDying++
			default:
				s.failedAfter++
			}
			if !fromBalancer(c.err) {
				s.failedGateway++
				s.gatewayAnswers = append(s.gatewayAnswers, msg)
			}
		}
		if failed {
			s.hit++
		}
		if okAfter {
			s.continued++
		} else {
			s.lost++
		}
	}
	return s
}

// err fails the scenario when the kill lost a session, a call failed with an answer of a gateway (the survivor
// must serve every session) or before the kill, the survivor died, or a handshake failed. Calls that were on the
// killed replica as it died fail at the balancer: that is what killing it means, and they are only counted.
func (k killResult) err() error {
	s := k.summary()
	var msgs []string
	if len(k.handshakeErrs) > 0 {
		msgs = append(msgs, "handshakes failed: "+strings.Join(k.handshakeErrs, " | "))
	}
	if s.lost > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d sessions lost (no successful call after the kill)", s.lost, k.sessions))
	}
	if s.failedBefore > 0 {
		msgs = append(msgs, fmt.Sprintf("%d calls failed before the kill", s.failedBefore))
	}
	if s.failedGateway > 0 {
		msgs = append(msgs, fmt.Sprintf("%d calls failed with a gateway's answer: %s", s.failedGateway, strings.Join(s.gatewayAnswers[:min(5, len(s.gatewayAnswers))], " | ")))
	}
	if k.survivorExited {
		msgs = append(msgs, "the surviving replica exited: "+k.survivorExitReason)
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("kill test: %s", strings.Join(msgs, "; "))
}

func (b *bench) killReport(k killResult) {
	s := k.summary()
	down := "never"
	if !k.downAt.IsZero() {
		down = ms(k.downAt.Sub(k.kill)) + " ms" + " after the SIGKILL"
	}
	split := make([]string, len(k.splitAfter))
	for i, c := range k.splitAfter {
		split[i] = fmt.Sprint(c)
	}
	fmt.Fprintf(b.out, "\n### Kill test: replica A killed (SIGKILL) mid-run\n\n"+
		"%d sessions (opened through the balancer, so each is known to both replicas) call through the pair's balancer for %s; "+
		"replica A gets SIGKILL %.1f s in and the clients go on until the end, never opening a new session. "+
		"A was reaped %s after the SIGKILL. A session *continued* when it had a successful call after the kill (on replica B, "+
		"from the shared record); a failed call *on the dying replica* started before A was reaped. "+
		"The balancer marked A down %s (a refused dial; requests sent to B instead: %d); requests answered after the kill, A / B: %s.\n\n",
		k.sessions, k.end.Sub(k.start).Round(time.Millisecond), k.kill.Sub(k.start).Seconds(), ms(k.dead.Sub(k.kill))+" ms",
		down, k.resent, strings.Join(split, " / "))
	fmt.Fprintf(b.out, "| sessions | calls ok before the kill | calls ok after | failed on the dying replica | failed after it was gone | failed before the kill | failures answered by a gateway | sessions that saw a failure | sessions continued | sessions lost | slowest session back after the kill |\n")
	fmt.Fprintf(b.out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(b.out, "| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s |\n", k.sessions, s.before, s.after, s.failedDying,
		s.failedAfter, s.failedBefore, s.failedGateway, s.hit, s.continued, s.lost, ms(s.recovered)+" ms")
	if len(s.msgs) > 0 {
		fmt.Fprintf(b.out, "\nThe failed calls, as the clients saw them:\n\n")
		for _, m := range slices.Sorted(maps.Keys(s.msgs)) {
			fmt.Fprintf(b.out, "- %d× `%s`\n", s.msgs[m], strings.ReplaceAll(m, "`", "'"))
		}
	}
	if k.survivorExited {
		fmt.Fprintf(b.out, "\n**The surviving replica exited**: %s\n", k.survivorExitReason)
	}
}

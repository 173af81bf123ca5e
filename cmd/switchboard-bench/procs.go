package main

// Child processes (the upstream, the proxy, the gateway) and what /proc says about them.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on every Linux architecture Go
// supports (the kernel's USER_HZ is fixed for user space, whatever CONFIG_HZ is).
const clockTicks = 100

type child struct {
	name string
	cmd  *exec.Cmd
	addr string // announced "listening ADDR", when the child announces
	logs *tailBuffer
	done chan struct{}
	err  error
}

// tailBuffer keeps the last bytes a child wrote, to show when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 16<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-8<<10:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// startChild starts a process in its own process group. With announce it waits for the child's first stdout
// line, "listening ADDR".
func startChild(name string, announce bool, path string, args ...string) (*child, error) {
	return startChildEnv(name, announce, nil, path, args...)
}

// startChildEnv is startChild with env ("KEY=value") added to the tool's own environment.
func startChildEnv(name string, announce bool, env []string, path string, args ...string) (*child, error) {
	c := &child{name: name, cmd: exec.Command(path, args...), logs: &tailBuffer{}, done: make(chan struct{})}
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stderr = c.logs
	var stdout io.ReadCloser
	if announce {
		var err error
		if stdout, err = c.cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	} else {
		c.cmd.Stdout = c.logs
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// The reader, when there is one, is joined by the waiter: Wait closes the pipe, so os/exec wants every read done
	// before it is called (the tail of the child's log would be lost otherwise).
	line := make(chan string, 1)
	copied := make(chan struct{})
	if announce {
		go func() {
			defer close(copied)
			br := bufio.NewReader(stdout)
			l, _ := br.ReadString('\n')
			line <- strings.TrimSpace(l)
			_, _ = io.Copy(c.logs, br)
		}()
	} else {
		close(copied)
	}
	go func() {
		<-copied
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	if !announce {
		return c, nil
	}
	select {
	case l := <-line:
		addr, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			c.stop()
			return nil, fmt.Errorf("%s did not start (first line %q): %s", name, l, c.logs)
		}
		c.addr = addr
		return c, nil
	case <-time.After(20 * time.Second):
		c.stop()
		return nil, fmt.Errorf("%s did not announce its address within 20s: %s", name, c.logs)
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL after 5s.
func (c *child) stop() {
	if c == nil {
		return
	}
	pgid := c.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
}

// cpuSeconds is the process's user+system CPU time (its own, not its children's).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: fields count from after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// After ')': state is field 3, so utime (14) and stime (15) are at 11 and 12.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat times")
	}
	return float64(ut+st) / clockTicks, nil
}

// cpuPrecise is the process's CPU time in seconds from the scheduler's own clock: the sum of its threads'
// /proc/PID/task/TID/schedstat run times, in nanoseconds. /proc/PID/stat counts whole ticks (10 ms), which a process
// that runs for a few milliseconds (a starting stdio child, a gateway until ready) may never be charged; threads that
// have exited are not counted here, which for a Go process, whose threads live on, is nothing.
func cpuPrecise(pid int) (float64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var ns uint64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread has just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad schedstat %q", b)
		}
		ns += n
	}
	return float64(ns) / 1e9, nil
}

// memKiB reads a "Vm…:  N kB" line of /proc/PID/status (VmRSS, VmHWM).
func memKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// resetPeak resets VmHWM to the current RSS (clear_refs 5), so each scenario reports its own peak. It fails
// quietly on kernels without it; the peak is then the process's lifetime peak.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// procSample is a process's CPU and memory at one moment.
type procSample struct {
	cpu      float64
	rss, hwm int64
}

func sample(pid int) procSample {
	var s procSample
	s.cpu, _ = cpuSeconds(pid)
	s.rss, _ = memKiB(pid, "VmRSS")
	s.hwm, _ = memKiB(pid, "VmHWM")
	return s
}

// freePort returns a loopback address that was free a moment ago (the gateway's listen must be in its config).
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// moduleRoot finds the directory of this repository's go.mod, from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/switchboard-mcp/switchboard\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the switchboard repository; pass -gateway PATH")
		}
		dir = parent
	}
}

// buildGateway builds ./cmd/switchboard into dir and returns the binary's path.
func buildGateway(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "switchboard")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/switchboard")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/switchboard: %v\n%s", err, b)
	}
	return out, nil
}

// gatewayProc is a running gateway and its endpoint.
type gatewayProc struct {
	*child
	url  string // the MCP endpoint
	base string
	cfg  string // as written, for error messages
}

// bareSuffix names a gateway that is the bench's own (switchboard-bench gateway): the routing and gateway packages
// wired with the config's upstreams and timeouts only, without serve's operability (metrics, audit, pinning,
// gateway-held tasks, trace-context headers, shape). Beside switchboard serve, it tells what the forwarding path
// costs from what the rest costs.
const bareSuffix = "-bare"

func bareGateway(name string) bool { return strings.HasSuffix(name, bareSuffix) }

// baselineSuffix names a gateway run from -baseline's binary, and baselineName is its load target.
const (
	baselineSuffix = "-baseline"
	baselineName   = "baseline per-client"
)

// startGateway writes cfg to dir/name.yaml, starts the gateway on it (env added to its environment) and waits for
// GET /readyz 200.
func (b *bench) startGateway(name, cfg string, env ...string) (*gatewayProc, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	g, err := b.launchGateway(name, addr, cfg, env...)
	if err != nil {
		return nil, err
	}
	if err := g.waitReady(50 * time.Millisecond); err != nil {
		return nil, err
	}
	return g, nil
}

// launchGateway writes cfg (after listen, log and requestTimeout) to dir/name.yaml and starts the gateway on addr,
// without waiting for it. env ("KEY=value") is added to the gateway's environment.
func (b *bench) launchGateway(name, addr, cfg string, env ...string) (*gatewayProc, error) {
	// requestTimeout below the client's 30s: a call the gateway loses is answered with its timeout error, which
	// tells a lost answer from a stuck HTTP exchange.
	cfg = fmt.Sprintf("listen: %q\nlog: {level: warn}\nrequestTimeout: 20s\n%s", addr, cfg)
	path := filepath.Join(b.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	bin, args := b.gateway, []string{"serve", "--config", path}
	if strings.HasSuffix(name, baselineSuffix) {
		bin = b.baseline
	} else if bareGateway(name) {
		bin, args = b.self, []string{"gateway", "-config", path}
	} else if b.profileDir != "" && name == b.profileScenario {
		bin, args = b.self, []string{"gateway", "-config", path,
			"-cpuprofile", filepath.Join(b.profileDir, "gateway-"+name+".cpu.pprof"),
			"-memprofile", filepath.Join(b.profileDir, "gateway-"+name+".heap.pprof")}
	}
	bin, args = b.pin.middleCommand(bin, args...)
	c, err := startChildEnv("gateway "+name, false, env, bin, args...)
	if err != nil {
		return nil, err
	}
	return &gatewayProc{child: c, base: "http://" + addr, url: "http://" + addr + "/mcp", cfg: cfg}, nil
}

// waitReady polls GET /readyz every poll until it answers 200; it stops the gateway and fails when the gateway
// exits or is not ready within 60 s.
func (g *gatewayProc) waitReady(poll time.Duration) error {
	c := g.child
	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	for {
		if c.exited() {
			return fmt.Errorf("%s exited: %v\nconfig:\n%s\nlog:\n%s", c.name, c.err, g.cfg, c.logs)
		}
		resp, err := hc.Get(g.base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			c.stop()
			return fmt.Errorf("%s not ready (GET /readyz != 200) within 60s\nlog:\n%s", c.name, c.logs)
		}
		select {
		case <-c.done: // reported at the top of the loop
		case <-time.After(poll):
		}
	}
}

// childrenOf lists the processes whose parent is pid (the gateway's or the bridge's stdio children), from
// /proc/*/stat.
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After ')': state, then ppid.
		if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// sessions reads the gateway's session count from /readyz.
func (g *gatewayProc) sessions(ctx context.Context) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	r, err := decodeReady(b)
	return r.Sessions, err
}

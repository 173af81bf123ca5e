package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// allowedCPUs is the CPUs a process or thread may run on, as the kernel has them; ok is false if it has ended.
func allowedCPUs(t *testing.T, id int) (cpus string, ok bool) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(id, &set); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return "", false
		}
		t.Fatalf("affinity of %d: %v", id, err)
	}
	return cpuArg(cpuList(&set)), true
}

// checkAllThreads fails the test for each thread of this process that may run on other CPUs than want.
func checkAllThreads(t *testing.T, want []int) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if got, ok := allowedCPUs(t, tid); ok && got != cpuArg(want) {
			t.Errorf("thread %d may run on %q, want %q", tid, got, cpuArg(want))
		}
	}
}

// needTwoCPUs skips a test that splits the CPUs on a machine without two, or without taskset.
func needTwoCPUs(t *testing.T) (tool, middle []int) {
	t.Helper()
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset on PATH")
	}
	tool, middle, err := cpuSplit()
	if err != nil {
		t.Skip(err)
	}
	return tool, middle
}

// TestPinProcess pins every thread of the test process to the tool's half, checks each thread's mask, and puts
// the mask back.
func TestPinProcess(t *testing.T) {
	tool, middle := needTwoCPUs(t)
	all := slices.Concat(tool, middle)
	if err := pinProcess(tool); err != nil {
		t.Fatal(err)
	}
	checkAllThreads(t, tool)
	if err := pinProcess(all); err != nil {
		t.Fatal(err)
	}
	checkAllThreads(t, all)
}

// TestMiddleCommand starts a gateway (the bench's bare one, on the tool's upstream) as a middle process is
// started, and checks that it runs on the middle's CPUs and the upstream on the tool's; without -pin a command is
// left as it is.
func TestMiddleCommand(t *testing.T) {
	if bin, args := (cpuPin{}).middleCommand("/bin/x", "a", "b"); bin != "/bin/x" || strings.Join(args, " ") != "a b" {
		t.Errorf("without -pin: %s %v, want /bin/x [a b]", bin, args)
	}
	tool, middle := needTwoCPUs(t)
	all := slices.Concat(tool, middle)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envChild, "1")
	if err := pinProcess(tool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pinProcess(all); err != nil {
			t.Error(err)
		}
	})
	up, err := startChild("upstream", true, self, "upstream", "-http", "127.0.0.1:0", "-tools", "1")
	if err != nil {
		t.Fatal(err)
	}
	defer up.stop()
	ts, _ := exec.LookPath("taskset")
	b := &bench{self: self, dir: t.TempDir(), pin: cpuPin{taskset: ts, middleCPUs: middle}}
	gw, err := b.startGateway("pin"+bareSuffix, "upstreams:\n  - {name: pc, url: \"http://"+up.addr+"/mcp\", session: shared}\n")
	if err != nil {
		t.Fatal(err)
	}
	defer gw.stop()
	for _, p := range []struct {
		name string
		pid  int
		want []int
	}{{"the upstream", up.cmd.Process.Pid, tool}, {"the gateway", gw.cmd.Process.Pid, middle}} {
		if got, _ := allowedCPUs(t, p.pid); got != cpuArg(p.want) {
			t.Errorf("%s may run on %q, want %q", p.name, got, cpuArg(p.want))
		}
	}
}

// TestPinScenarios: -pin refuses the scenarios whose gateways are sized or timed for the whole machine, before
// it starts anything.
func TestPinScenarios(t *testing.T) {
	for _, scen := range []string{"replicas", "cold", "catalog", "idle", "search", "load,cold"} {
		var out, log bytes.Buffer
		if code := cmdRun([]string{"-pin", "-scenarios", scen}, &out, &log); code != 2 || !strings.Contains(log.String(), "-pin runs the load and stdio scenarios only") {
			t.Errorf("-pin -scenarios %s: exit %d, %q; want 2 and the reason", scen, code, log.String())
		}
	}
}

// TestBenchPinned runs the load scenario at 1 client with -pin and checks that it ran, says how it was placed,
// and put the tool's own mask back.
func TestBenchPinned(t *testing.T) {
	tool, middle := needTwoCPUs(t)
	out := runTool(t, "-pin", "-scenarios", "load", "-clients", "1", "-duration", "1s")
	for _, want := range []string{"| 1 | switchboard per-client |", "| 1 | proxy |", "| 1 | bare gateway per-client |", "| 1 | mcp-proxy v0.43.2 |",
		"pinned: this tool, its clients and the upstreams on CPUs " + cpuArg(tool) + "; the proxy, the bridge, the peer and the gateways on CPUs " + cpuArg(middle)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
	checkAllThreads(t, slices.Concat(tool, middle))
}

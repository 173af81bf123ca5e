package main

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// allowedCPUs is the CPUs a process or thread may run on, as the kernel has them.
func allowedCPUs(t *testing.T, id int) string {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(id, &set); err != nil {
		t.Fatalf("affinity of %d: %v", id, err)
	}
	return cpuArg(cpuList(&set))
}

// needTwoCPUs skips a test that splits the CPUs on a machine without two, or without taskset.
func needTwoCPUs(t *testing.T) (tool, middle []int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is Linux's")
	}
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
	t.Cleanup(func() {
		if err := pinProcess(all); err != nil {
			t.Error(err)
		}
	})
	if err := pinProcess(tool); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if got := allowedCPUs(t, tid); got != cpuArg(tool) {
			t.Errorf("thread %s may run on %q, want %q", task.Name(), got, cpuArg(tool))
		}
	}
}

// TestMiddleCommand starts the tool's upstream as a middle process would be started, and checks that it runs on
// the middle's CPUs; without -pin the command is left as it is.
func TestMiddleCommand(t *testing.T) {
	b := &bench{}
	if bin, args := b.middleCommand("/bin/x", "a", "b"); bin != "/bin/x" || strings.Join(args, " ") != "a b" {
		t.Errorf("without -pin: %s %v, want /bin/x [a b]", bin, args)
	}
	_, middle := needTwoCPUs(t)
	ts, _ := exec.LookPath("taskset")
	b = &bench{taskset: ts, middleCPUs: middle}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envChild, "1")
	bin, args := b.middleCommand(self, "upstream", "-http", "127.0.0.1:0", "-tools", "1")
	c, err := startChild("pinned upstream", true, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	if got := allowedCPUs(t, c.cmd.Process.Pid); got != cpuArg(middle) {
		t.Errorf("the middle process may run on %q, want %q", got, cpuArg(middle))
	}
}

// TestBenchPinned runs the load scenario at 1 client with -pin and checks that it ran and says how it was placed.
func TestBenchPinned(t *testing.T) {
	tool, middle := needTwoCPUs(t)
	var out, log bytes.Buffer
	if code := cmdRun([]string{"-pin", "-scenarios", "load", "-clients", "1", "-duration", "1s"}, &out, &log); code != 0 {
		t.Fatalf("switchboard-bench -pin: exit %d\n%s\n%s", code, log.String(), out.String())
	}
	for _, want := range []string{"| 1 | switchboard per-client |", "| 1 | proxy |",
		"pinned: this tool, its clients, the upstreams and Redis on CPUs " + cpuArg(tool) + "; the proxy, the bridge and the gateways on CPUs " + cpuArg(middle)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
	if got, want := allowedCPUs(t, 0), cpuArg(slices.Concat(tool, middle)); got != want {
		t.Errorf("after the run the tool may run on %q, want every CPU it started with (%s)", got, want)
	}
}

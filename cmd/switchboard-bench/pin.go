package main

// -pin: the middle process on CPUs of its own.
//
// On a small machine the tool's clients, the upstreams and the process under test share every core. At 1 client
// each call then wakes threads across the cores in turn, and what the process under test is charged depends on
// what ran on its core just before (its caches, the scheduler's wake-ups). -pin splits the CPUs: the tool, its
// clients, the upstreams and Redis on the first half, the proxy, the bridge and the gateways (with their stdio
// children) on the second. Both sides of every comparison are placed alike.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cpuSplit divides the CPUs this process may run on into two halves: the tool's and the middle's. The middle
// gets the larger half when the count is odd.
func cpuSplit() (tool, middle []int, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, nil, fmt.Errorf("reading the CPU affinity: %w", err)
	}
	cpus := cpuList(&set)
	if len(cpus) < 2 {
		return nil, nil, fmt.Errorf("-pin needs at least 2 CPUs, this process may use %d", len(cpus))
	}
	h := len(cpus) / 2
	return cpus[:h], cpus[h:], nil
}

// cpuList is the CPUs in set, in order.
func cpuList(set *unix.CPUSet) []int {
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// cpuArg is cpus as taskset's -c takes them: "1" or "2,3".
func cpuArg(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// pinProcess binds every thread of this process to cpus. A thread the runtime starts later inherits the mask of
// the thread that starts it; one started while the threads are listed is caught by the next pass.
func pinProcess(cpus []int) error {
	var want unix.CPUSet
	for _, c := range cpus {
		want.Set(c)
	}
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			if unix.SchedGetaffinity(tid, &cur) == nil && cur == want {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &want); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it ended
				return fmt.Errorf("binding thread %d to CPUs %s: %w", tid, cpuArg(cpus), err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return errors.New("threads kept starting while the process was being pinned")
}

// middleCommand is how a proxy, bridge or gateway is started: as it is, or under taskset on the middle's CPUs.
func (b *bench) middleCommand(path string, args ...string) (string, []string) {
	if b.taskset == "" {
		return path, args
	}
	return b.taskset, append([]string{"-c", cpuArg(b.middleCPUs), path}, args...)
}

// setupPin resolves -pin: it pins this process (its clients, and the upstreams it starts, which inherit the mask)
// and returns a function that restores the mask it found.
func (b *bench) setupPin() (restore func(), err error) {
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("-pin starts the middle processes with taskset (util-linux): %w", err)
	}
	tool, middle, err := cpuSplit()
	if err != nil {
		return nil, err
	}
	all := slices.Concat(tool, middle)
	if err := pinProcess(tool); err != nil {
		return nil, err
	}
	b.taskset, b.toolCPUs, b.middleCPUs = ts, tool, middle
	return func() { _ = pinProcess(all) }, nil
}

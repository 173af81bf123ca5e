package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"

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
		return nil, nil, fmt.Errorf("needs at least 2 CPUs, this process may use %d", len(cpus))
	}
	h := len(cpus) / 2
	return cpus[:h], cpus[h:], nil
}

// cpuList is the CPUs in set, in order.
func cpuList(set *unix.CPUSet) []int {
	n := set.Count()
	cpus := make([]int, 0, n)
	for c := 0; len(cpus) < n; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// pinProcess binds every thread of this process to cpus. A thread the runtime starts later inherits the mask of
// the thread that starts it, so the passes end when one finds no thread it has not bound yet.
func pinProcess(cpus []int) error {
	var want unix.CPUSet
	for _, c := range cpus {
		want.Set(c)
	}
	bound := map[int]bool{}
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		found := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || bound[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &want); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it ended
				return fmt.Errorf("binding thread %d to CPUs %s: %w", tid, cpuArg(cpus), err)
			}
			bound[tid], found = true, true
		}
		if !found {
			return nil
		}
	}
	return errors.New("threads kept starting while the process was being pinned")
}

// setupPin resolves -pin: it pins this process (its clients, and the upstreams it starts, which inherit the mask)
// to the first half of its CPUs and returns the placement and a function that puts back the mask it found. Go (1.25 on) resizes the
// tool's own scheduler to the mask within about a second; the middles start on theirs.
func setupPin() (pin cpuPin, restore func() error, err error) {
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return cpuPin{}, nil, fmt.Errorf("-pin starts the middle processes with taskset (util-linux): %w", err)
	}
	tool, middle, err := cpuSplit()
	if err != nil {
		return cpuPin{}, nil, fmt.Errorf("-pin: %w", err)
	}
	all := slices.Concat(tool, middle)
	restore = func() error {
		if err := pinProcess(all); err != nil {
			return fmt.Errorf("-pin: restoring the CPU mask: %w", err)
		}
		return nil
	}
	if err := pinProcess(tool); err != nil {
		_ = restore() // undo a pass that stopped halfway
		return cpuPin{}, nil, fmt.Errorf("-pin: %w", err)
	}
	return cpuPin{taskset: ts, toolCPUs: tool, middleCPUs: middle}, restore, nil
}

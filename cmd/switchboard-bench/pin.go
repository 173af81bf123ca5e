package main

// -pin: the middle process on CPUs of its own.
//
// On a small machine the tool's clients, the upstreams and the process under test share every core. At 1 client
// each call then wakes threads across the cores in turn, and what the process under test is charged depends on
// what ran on its core just before. -pin splits the CPUs: the tool, its clients and the upstreams on the first
// half, the proxy, the bridge, the peer and the gateways (with their stdio children) on the second. Both sides of
// every comparison are placed alike. It is Linux's (CPU affinity and taskset): pin_linux.go.

import (
	"strconv"
	"strings"
)

// pinnable reports whether -pin may run scenario s. The others start no middle (search) or size and time their
// gateways for the whole machine (replicas' GOMAXPROCS shares, cold's time to ready), which half of it would
// silently change.
func pinnable(s string) bool { return s == "load" || s == "stdio" }

// cpuPin is -pin's placement: taskset's path and the two halves of the CPUs (setupPin). Its zero value, without
// -pin, places nothing.
type cpuPin struct {
	taskset              string
	toolCPUs, middleCPUs []int
}

// middleCommand is how a proxy, bridge or gateway is started: as it is, or under taskset on the middle's CPUs.
func (p cpuPin) middleCommand(path string, args ...string) (string, []string) {
	if p.taskset == "" {
		return path, args
	}
	return p.taskset, append([]string{"-c", cpuArg(p.middleCPUs), path}, args...)
}

// cpuArg is cpus as taskset's -c takes them: "1" or "2,3".
func cpuArg(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

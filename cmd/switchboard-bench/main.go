// Command switchboard-bench is Switchboard's load tool (issue 8). It drives N concurrent MCP clients over streamable
// HTTP (real handshakes, one session each) calling a tool on a fast upstream, direct, through a plain reverse proxy
// (net/http/httputil: the floor for any proxy) and through Switchboard, in the same run, and prints throughput,
// latency percentiles, errors, and the CPU and peak RSS of the process in the middle, with the ratios. It also
// measures a stdio upstream shared by many clients, a large catalog listed page by page, and idle sessions.
//
//	switchboard-bench [run] [-short] [-clients 1,8,32,64] [-duration 10s] [-gateway bin/switchboard] [-o FILE]
//	switchboard-bench upstream [-http ADDR] [-tools N]     the fast upstream (stdio without -http)
//	switchboard-bench proxy -target URL [-listen ADDR]     the reverse proxy
//	switchboard-bench gateway -config FILE -cpuprofile F   the gateway with a CPU profile (see -profile)
//
// It exits 1 when any scenario saw an error (a broken gateway fails CI), never because a number is slow.
// See docs/benchmarks.md.
package main

import (
	"fmt"
	"os"
)

func main() { os.Exit(dispatch(os.Args[1:])) }

func dispatch(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "upstream":
			return cmdUpstream(args[1:])
		case "proxy":
			return cmdProxy(args[1:])
		case "gateway":
			return cmdGateway(args[1:])
		case "run":
			return cmdRun(args[1:], os.Stdout, os.Stderr)
		case "help", "-h", "--help":
			fmt.Println("usage: switchboard-bench [run] [flags] | upstream | proxy | gateway; switchboard-bench run -h for the flags")
			return 0
		}
	}
	return cmdRun(args, os.Stdout, os.Stderr)
}

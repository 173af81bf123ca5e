// Command switchboard-bench is Switchboard's load tool (issue 8). It drives N concurrent MCP clients over streamable
// HTTP (real handshakes, one session each) calling a tool on a fast upstream, direct, through a plain reverse proxy
// (net/http/httputil: the floor for any proxy) and through Switchboard, in the same run, and prints throughput,
// latency percentiles, errors, the CPU and peak RSS of the process in the middle and the upstream's dials per
// 1,000 calls, with the ratios. It also measures a stdio upstream shared by many clients against a simple
// stdio-to-HTTP bridge, a large catalog listed page by page, idle sessions, two replicas sharing a redis-server
// behind a round-robin balancer against one without (and one of them killed mid-run), and the time to ready with
// many HTTP or stdio upstreams (issue 20). The search scenario (not run by default) measures the tool-search index
// of issue 16 in process, with no gateway and no network: recall@1/5/10 and MRR on the evaluation set of
// routing/search/evalset, and search latency, build time and heap per tool at 1,000 and 10,000 tools, and the cost
// of one changed tool.
//
//	switchboard-bench [run] [-short] [-clients 1,8,32,64] [-duration 10s] [-gateway bin/switchboard] [-o FILE]
//	    [-scenarios load,stdio,catalog,idle,replicas,cold] [-replica-clients 1,32] [-cold-upstreams 100]
//	switchboard-bench -scenarios search [-search-tools 1000,10000] [-search-passes 30]   no gateway is built
//	switchboard-bench upstream [-http ADDR] [-tools N]     the fast upstream (stdio without -http)
//	switchboard-bench proxy -target URL [-listen ADDR]     the reverse proxy
//	switchboard-bench stdiobridge [-listen ADDR]           the simple stdio-to-HTTP bridge (stdio's comparator)
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
		case "stdiobridge":
			return cmdStdioBridge(args[1:])
		case "run":
			return cmdRun(args[1:], os.Stdout, os.Stderr)
		case "help", "-h", "--help":
			fmt.Println("usage: switchboard-bench [run] [flags] | upstream | proxy | stdiobridge | gateway; switchboard-bench run -h for the flags")
			return 0
		}
	}
	return cmdRun(args, os.Stdout, os.Stderr)
}

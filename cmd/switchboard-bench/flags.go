package main

// cmdRun's flags: the bench they make, and the options around it.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
)

// runOpts are cmdRun's flags that are not the bench's own settings.
type runOpts struct {
	gateway, outFile string
	pin              bool
	peer             string // -mcp-proxy: what to build or run as the peer; noPeer for none
}

// newBench reads cmdRun's flags into a bench and the options around it; a nil bench with the exit code when they
// do not make a run.
func newBench(args []string, stderr io.Writer) (*bench, runOpts, int) {
	fl := flag.NewFlagSet("switchboard-bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	short := fl.Bool("short", false, "CI mode: 1 and 8 clients, 2s each, a small catalog, 500 idle sessions, one search pass")
	clients := fl.String("clients", "1,8,32,64", "concurrent clients of the load scenario")
	stdioClients := fl.String("stdio-clients", "1,64", "concurrent clients of the shared stdio scenario")
	duration := fl.Duration("duration", 10*time.Second, "measured time of each load run (after a warm-up of a fifth of it, at most 2s)")
	gw := fl.String("gateway", "", "the switchboard binary; default: build ./cmd/switchboard into a temporary directory")
	baseline := fl.String("baseline", "", "another switchboard binary (an earlier commit's) measured beside -gateway in the load scenario, per-client, for a before/after in one run")
	scen := fl.String("scenarios", "load,stdio,catalog,idle,replicas,cold", "scenarios to run: load, stdio, catalog, idle, replicas, cold, search")
	catUp := fl.Int("catalog-upstreams", 100, "upstreams of the catalog scenario")
	catTools := fl.Int("catalog-tools", 100, "tools per upstream of the catalog scenario")
	pageSize := fl.Int("page-size", 100, "the gateway's pageSize in the catalog scenario")
	passes := fl.Int("catalog-passes", 5, "times the whole catalog is listed")
	idle := fl.Int("idle-sessions", 10000, "sessions of the idle scenario")
	replicaClients := fl.String("replica-clients", "1,32", "concurrent clients of the replicas scenario (the kill test runs the largest)")
	coldUp := fl.Int("cold-upstreams", 100, "upstreams of the cold scenario (against 1)")
	coldTools := fl.Int("cold-tools", 10, "tools per upstream of the cold scenario")
	coldRounds := fl.Int("cold-rounds", 3, "rounds of the cold scenario (each starts the gateway four times)")
	searchTools := fl.String("search-tools", "1000,10000", "tool counts of the search scenario's latency, build and memory runs")
	searchPasses := fl.Int("search-passes", 30, "times each query of the evaluation set is searched at each tool count")
	embURL := fl.String("search-embeddings", "", "an OpenAI-compatible embeddings API (e.g. http://127.0.0.1:PORT/v1 of node .ci/peers/embeddings-server.mjs): the search scenario also measures hybrid search's recall on the blind queries; the key, if any, from $SWITCHBOARD_BENCH_EMBEDDINGS_KEY")
	embModel := fl.String("search-embeddings-model", "use-lite", "the model -search-embeddings is asked for")
	outFile := fl.String("o", "", "also write the report to this file")
	profile := fl.String("profile", "", "write CPU and heap profiles of the gateway of scenario -profile-scenario into this directory (the profiled gateway is this tool's bare one, not switchboard serve; for load, a CPU profile of the proxy too)")
	profScen := fl.String("profile-scenario", "load", "scenario whose gateway is profiled: load, stdio, catalog or idle")
	peer := fl.String("mcp-proxy", defaultPeer, "the real peer of the load and stdio scenarios, TBXark's mcp-proxy: module@version, built from source (fetched through the Go module proxy), a binary's path, or \""+noPeer+"\"")
	rounds := fl.Int("rounds", 1, "rounds of the load and stdio scenarios, each a whole interleaved pass with its targets in a turned order; with more than one, the report ends with each target's ratios round by round and their medians")
	pin := fl.Bool("pin", false, "split the CPUs in two: this tool, its clients and the upstreams on the first half; the proxy, the bridge, the peer and the gateways (and their stdio children) on the second (with taskset; Linux; load and stdio scenarios)")
	if err := fl.Parse(args); err != nil {
		return nil, runOpts{}, 2
	}
	if *short {
		*clients, *stdioClients, *duration = "1,8", "1,8", 2*time.Second
		*catUp, *catTools, *pageSize, *passes, *idle = 10, 20, 50, 2, 500
		*replicaClients, *coldUp, *coldRounds = "8", 10, 1
		*searchPasses = 1
	}
	b := &bench{short: *short, baseline: *baseline, duration: *duration, catUpstreams: *catUp, catTools: *catTools, pageSize: *pageSize,
		passes: *passes, idleSessions: *idle, progress: stderr, profileDir: *profile, profileScenario: *profScen,
		coldUpstreams: *coldUp, coldTools: max(*coldTools, 1), coldRounds: max(*coldRounds, 1),
		searchPasses: max(*searchPasses, 1), searchBuilds: 5, searchWiths: 200}
	if *short {
		b.searchBuilds, b.searchWiths = 2, 20
	}
	b.warm = min(*duration/5, 2*time.Second)
	if *rounds < 1 {
		fmt.Fprintln(stderr, "-rounds: at least 1")
		return nil, runOpts{}, 2
	}
	b.rounds = *rounds
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case "load", "stdio", "catalog", "idle", "replicas", "cold":
			b.needGateway = true
		case "search": // in process: no gateway, no children, no network
		default:
			fmt.Fprintf(stderr, "unknown scenario %q\n", s)
			return nil, runOpts{}, 2
		}
		b.scenarios = append(b.scenarios, s)
	}
	if *pin {
		for _, s := range b.scenarios {
			if !pinnable(s) {
				fmt.Fprintf(stderr, "-pin runs the load and stdio scenarios only: %s starts no middle process, or sizes or times its gateways for the whole machine\n", s)
				return nil, runOpts{}, 2
			}
		}
	}
	if *embURL != "" {
		b.embeddings = hybrid.Config{URL: *embURL, Model: *embModel, APIKey: os.Getenv("SWITCHBOARD_BENCH_EMBEDDINGS_KEY")}
		if _, err := hybrid.NewEmbedder(b.embeddings, nil, nil, nil); err != nil {
			fmt.Fprintln(stderr, "-search-embeddings:", err)
			return nil, runOpts{}, 2
		}
	}
	var err error
	if b.searchTools, err = parseInts(*searchTools); err != nil {
		fmt.Fprintln(stderr, "-search-tools:", err)
		return nil, runOpts{}, 2
	}
	if b.clients, err = parseInts(*clients); err != nil {
		fmt.Fprintln(stderr, "-clients:", err)
		return nil, runOpts{}, 2
	}
	if b.stdioClients, err = parseInts(*stdioClients); err != nil {
		fmt.Fprintln(stderr, "-stdio-clients:", err)
		return nil, runOpts{}, 2
	}
	if b.replicaClients, err = parseInts(*replicaClients); err != nil {
		fmt.Fprintln(stderr, "-replica-clients:", err)
		return nil, runOpts{}, 2
	}
	if *coldUp < 2 {
		fmt.Fprintln(stderr, "-cold-upstreams: at least 2 (it is compared with 1)")
		return nil, runOpts{}, 2
	}
	return b, runOpts{gateway: *gw, outFile: *outFile, pin: *pin, peer: *peer}, 0
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

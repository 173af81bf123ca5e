package main

// The processes the load tool re-executes itself as: the fast upstream (HTTP or stdio), the plain reverse proxy,
// and a profiling copy of the gateway.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

type echoIn struct {
	Text string `json:"text"`
}

type noIn struct{}

// newUpstreamServer is the fast upstream: an official Go SDK server with an echo tool and tools-1 synthetic
// tools (tools counts echo), each answering at once.
func newUpstreamServer(tools int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	for i := 1; i < tools; i++ {
		name := fmt.Sprintf("tool_%03d", i)
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "synthetic tool " + name + " for the catalog benchmark; it does nothing useful"},
			func(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
			})
	}
	return s
}

// announce prints the address a child listens on as its first line of stdout, which the parent waits for.
func announce(addr net.Addr) { fmt.Printf("listening %s\n", addr) }

// serveUntilSignal serves h on ln until SIGTERM/SIGINT.
func serveUntilSignal(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc // Serve has returned: the goroutine is joined
	return nil
}

// cmdUpstream: switchboard-bench upstream [-http ADDR | -stdio] [-tools N]. Over HTTP every path serves the same
// server (stateful sessions), so one process stands for many upstreams at /u/NNN/mcp.
func cmdUpstream(args []string) int {
	fl := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fl.String("http", "", "serve streamable HTTP on ADDR (every path); default: stdio")
	tools := fl.Int("tools", 1, "number of tools, echo included")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	s := newUpstreamServer(*tools)
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			return 1
		}
		return 0
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	announce(ln.Addr())
	cl := &countingListener{Listener: ln}
	mcpH := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == acceptsPath {
			fmt.Fprint(w, cl.accepted.Load())
			return
		}
		mcpH.ServeHTTP(w, r)
	})
	if err := serveUntilSignal(cl, h); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	return 0
}

// acceptsPath is where the HTTP upstream tells how many TCP connections it has accepted (the parent reads it at both
// ends of a measured window: dials per 1,000 calls, issue 20).
const acceptsPath = "/_bench/accepts"

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// acceptMeter reads an HTTP upstream's accepted connections at both ends of a measured window. Each reading is a
// request on a new connection (no keep-alive), which the upstream counts before it answers; so the end reading
// counts one connection of the meter's own, the start reading's is already in the start value.
type acceptMeter struct {
	base       string // http://ADDR
	a, b       int64
	errA, errB error
}

func (m *acceptMeter) read() (int64, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(m.base + acceptsPath)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func (m *acceptMeter) begin() { m.a, m.errA = m.read() }
func (m *acceptMeter) end()   { m.b, m.errB = m.read() }

// dials is the number of connections the upstream accepted in the window, the meter's own excluded.
func (m *acceptMeter) dials() (int64, bool) {
	if m.errA != nil || m.errB != nil {
		return 0, false
	}
	return m.b - m.a - 1, true
}

// newProxy is the floor: net/http/httputil's reverse proxy, flushing at once (SSE).
func newProxy(target *url.URL) http.Handler {
	p := httputil.NewSingleHostReverseProxy(target)
	p.FlushInterval = -1
	p.Transport = &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	p.ErrorLog = nil
	return p
}

// cmdProxy: switchboard-bench proxy -listen ADDR -target URL. A separate process, like the gateway, so that its
// CPU and memory are measured the same way.
func cmdProxy(args []string) int {
	fl := flag.NewFlagSet("proxy", flag.ContinueOnError)
	addr := fl.String("listen", "127.0.0.1:0", "address to listen on")
	target := fl.String("target", "", "upstream base URL (scheme://host:port)")
	cpu := fl.String("cpuprofile", "", "write a CPU profile of the proxy's life here on exit")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "proxy: -target must be a URL")
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	if *cpu != "" {
		// The gateway's profile has its counterpart: where the baseline spends its time, on the same load.
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "proxy:", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "proxy:", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	announce(ln.Addr())
	if err := serveUntilSignal(ln, newProxy(u)); err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	return 0
}

// cmdGateway: switchboard-bench gateway -config FILE [-cpuprofile FILE] [-memprofile FILE]. The bare gateway:
// the routing and gateway packages wired as cmd/switchboard's serve wires them for the config's upstreams and
// timeouts, without serve's operability (metrics, audit, pinning, gateway-held tasks, trace-context headers,
// shape), so that the load scenario can tell the forwarding path's cost from the rest; and the gateway -profile
// profiles, with a CPU profile of its whole life written on SIGTERM (serve has no pprof endpoint, and this keeps
// the load generator out of the profile).
func cmdGateway(args []string) int {
	fl := flag.NewFlagSet("gateway", flag.ContinueOnError)
	path := fl.String("config", "", "config file")
	cpu := fl.String("cpuprofile", "", "write a CPU profile here on exit")
	mem := fl.String("memprofile", "", "write a heap profile here on exit")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.Log.Level}))
	r, err := newRouter(cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gateway:", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "gateway:", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	srv := gateway.New(r, gateway.Options{AllowOrigin: cfg.OriginAllowed, AllowHost: cfg.HostAllowed, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rctx, stopRouter := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(rctx) }()
	err = srv.Serve(ctx, ln, 2*time.Second)
	if *mem != "" {
		if f, ferr := os.Create(*mem); ferr == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	stopRouter()
	<-done
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	return 0
}

// newRouter is cmd/switchboard's newRouter reduced to the upstreams, their era and the timeouts.
func newRouter(cfg *config.Config, log *slog.Logger) (*routing.Router, error) {
	var ups []routing.UpstreamConfig
	for _, u := range cfg.Upstreams {
		if u.Disabled {
			continue
		}
		t, err := upstream.NewTransport(upstream.Spec{
			Name: u.Name, Command: u.Command, Args: u.Args, Env: u.Env, EnvPassthrough: u.EnvPassthrough, Dir: u.Cwd,
			URL: u.URL, Headers: u.Headers, Logger: log, Protocol: string(u.Protocol), Shared: u.Session == config.SessionShared,
		})
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		mode := routing.PerClient
		if u.Session == config.SessionShared {
			mode = routing.Shared
		}
		ups = append(ups, routing.UpstreamConfig{
			Name: u.Name, Prefix: u.Prefix, Mode: mode, Transport: t, Kind: u.Transport(), Protocol: string(u.Protocol),
			Timeout: u.Timeout, MaxInstances: u.MaxInstances, IdleTimeout: u.IdleTimeout,
		})
	}
	return routing.New(routing.Options{
		PageSize: cfg.PageSize, CursorSecret: cfg.CursorSecret, RequestTimeout: cfg.RequestTimeout,
		MaxRequestTimeout: cfg.MaxRequestTimeout, SessionIdleTimeout: cfg.SessionIdleTimeout,
		Version: "bench", Logger: log,
	}, ups)
}

// readyBody is the part of /readyz the tool reads.
type readyBody struct {
	Ready    bool `json:"ready"`
	Sessions int  `json:"sessions"`
}

func decodeReady(b []byte) (readyBody, error) {
	var r readyBody
	err := json.Unmarshal(b, &r)
	return r, err
}

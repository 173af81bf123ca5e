package main

// The replicas scenario's load balancer, in the tool's process.

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// balancer sends every request to the next backend in turn, with no stickiness: a deployment may add
// Mcp-Session-Id affinity as an optimisation, but here any request may land on either replica, which is what the
// shared state has to carry. A backend that refuses a connection is marked down for good and the request goes to
// the next one: a refused dial means the request was never sent, so sending it elsewhere is safe. Any other error,
// once the request may have reached the replica, is the client's 502: the balancer cannot know whether the
// replica acted on it.
type balancer struct {
	url      string   // the MCP endpoint clients use
	affinity bool     // Mcp-Session-Id affinity: a session's requests go to one backend while it is up
	pinned   sync.Map // with affinity, session id → the *backend that answered its initialize
	backends []*backend
	next     atomic.Uint64
	resent   atomic.Int64 // requests sent to another backend after a refused dial
	tr       *http.Transport
	srv      *http.Server
	served   chan error // Serve's return
}

type backend struct {
	host   string
	down   atomic.Bool
	downAt atomic.Int64 // when it was marked down, Unix nanoseconds
	served atomic.Int64 // requests it answered (any status)
}

// newBalancer listens on a loopback port and serves until close. bases are the backends' http://HOST:PORT. With
// affinity, a request carrying Mcp-Session-Id goes to the backend that created the session (learned from the
// initialize's answer), else to the one the id hashes to, while that one is up (the Helm chart's ingress hashes);
// the rest go round robin. Learning it keeps even replicas that share nothing serving their own sessions.
func newBalancer(affinity bool, bases ...string) (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lb := &balancer{
		url:      "http://" + ln.Addr().String() + "/mcp",
		affinity: affinity,
		tr:       &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: 90 * time.Second, DisableCompression: true},
		served:   make(chan error, 1),
	}
	for _, b := range bases {
		lb.backends = append(lb.backends, &backend{host: strings.TrimPrefix(b, "http://")})
	}
	rp := &httputil.ReverseProxy{
		// The backend is chosen per attempt, in RoundTrip.
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "backend.invalid" },
		Transport:     lb,
		FlushInterval: -1, // SSE: every event at once
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "balancer: "+err.Error(), http.StatusBadGateway)
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Buffered, so that a request whose dial was refused can be sent again (MCP messages are small).
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		rp.ServeHTTP(w, r)
	})
	lb.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { lb.served <- lb.srv.Serve(ln) }()
	return lb, nil
}

// close stops serving and joins the server's goroutine.
func (lb *balancer) close() {
	_ = lb.srv.Close()
	<-lb.served
	lb.tr.CloseIdleConnections()
}

// pick returns the backend for a request: its session's with affinity, else the next that is up; nil when none is.
func (lb *balancer) pick(req *http.Request) *backend {
	n := uint64(len(lb.backends))
	if sid := req.Header.Get("Mcp-Session-Id"); lb.affinity && sid != "" {
		if v, ok := lb.pinned.Load(sid); ok && !v.(*backend).down.Load() {
			return v.(*backend)
		}
		h := fnv.New64a()
		_, _ = h.Write([]byte(sid))
		if be := lb.backends[h.Sum64()%n]; !be.down.Load() {
			return be
		}
	}
	start := lb.next.Add(1)
	for i := range n {
		if be := lb.backends[(start+i)%n]; !be.down.Load() {
			return be
		}
	}
	return nil
}

// RoundTrip sends the request to the next backend that is up, and to the one after when the dial is refused.
func (lb *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	err := errors.New("balancer: no backend is up")
	for range lb.backends {
		be := lb.pick(req)
		if be == nil {
			break
		}
		out := req.Clone(req.Context())
		out.URL.Host, out.Host = be.host, ""
		if req.GetBody != nil {
			if out.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		var resp *http.Response
		if resp, err = lb.tr.RoundTrip(out); err == nil {
			be.served.Add(1)
			if lb.affinity {
				if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && req.Method == http.MethodPost {
					lb.pinned.Store(sid, be)
				} else if req.Method == http.MethodDelete {
					lb.pinned.Delete(req.Header.Get("Mcp-Session-Id"))
				}
			}
			return resp, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
		if be.down.CompareAndSwap(false, true) {
			be.downAt.Store(time.Now().UnixNano())
		}
		lb.resent.Add(1)
	}
	return nil, err
}

// servedCounts is how many requests each backend answered so far.
func (lb *balancer) servedCounts() []int64 {
	out := make([]int64, len(lb.backends))
	for i, be := range lb.backends {
		out[i] = be.served.Load()
	}
	return out
}

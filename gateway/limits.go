package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Limiter enforces per-caller limits, across replicas when it is backed by Redis (routing/state implements it).
type Limiter interface {
	Allow(ctx context.Context, key string, rate float64, burst int) (ok bool, retryAfter time.Duration, err error)
	Acquire(ctx context.Context, key string, limit int, ttl time.Duration) (release func(), ok bool, err error)
}

// Limits configure the limiter: a token bucket of requests and a bound on calls in flight, per principal (per
// client address without auth).
type Limits struct {
	Limiter Limiter
	// RequestsPerSecond and Burst shape the request rate; 0 turns it off.
	RequestsPerSecond float64
	Burst             int
	// ConcurrentCalls bounds calls in flight (tools/call, prompts/get, resources/read, completion/complete);
	// 0 turns it off. CallTTL is how long a lease lives if a replica dies holding it.
	ConcurrentCalls int
	CallTTL         time.Duration
}

// callerLimits apply Limits to each caller's requests, whatever front end they come by (and to the server cards).
type callerLimits struct {
	who callers
	log *slog.Logger
	// limits are Options.Limits, which a reload may replace (set).
	limits atomic.Pointer[Limits]
}

// limitKey identifies the caller for limits: its principal, or its address without auth.
func (cl *callerLimits) limitKey(r *http.Request) string {
	if k := cl.who.key(r.Context()); k != "" {
		return "p:" + k
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "a:" + host
}

// set replaces the limits: requests admitted from now on count against the new ones.
func (cl *callerLimits) set(l Limits) { cl.limits.Store(&l) }

// admit applies the limits to one request. It answers a refused request itself (HTTP 429 with a JSON-RPC error
// and Retry-After: "a limited request gets a JSON-RPC error with a retry hint, never a dropped connection") and
// returns ok false; otherwise release ends the request's hold on the concurrency bound.
func (cl *callerLimits) admit(w http.ResponseWriter, r *http.Request, m jsonrpc.Message) (release func(), ok bool) {
	release, refusal := cl.check(r.Context(), cl.limitKey(r), m)
	if refusal != nil {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((refusal.retry+time.Second-1)/time.Second))))
		writeJSON(w, http.StatusTooManyRequests, refusal.answer(m))
		return nil, false
	}
	return release, true
}

// refusal is why the limits refused a request, and when to try again.
type refusal struct {
	retry time.Duration
	msg   string
}

// answer is the JSON-RPC error a refused request gets, with data.retryAfterMs.
func (f *refusal) answer(m jsonrpc.Message) []byte {
	data := []byte(`{"retryAfterMs":` + strconv.FormatInt(f.retry.Milliseconds(), 10) + `}`)
	return jsonrpc.AppendError(nil, m.ID(), protocol.CodeUnavailable, f.msg, data) // data.retryAfterMs says when to try again
}

// check applies the limits to one request of the caller key: every request counts against the rate, every call
// (isCall) against the bound on calls in flight, whether it came alone or in a batch. A limiter that cannot be
// reached lets requests through: limits protect the gateway, an outage of theirs must not stop it.
func (cl *callerLimits) check(ctx context.Context, key string, m jsonrpc.Message) (release func(), refused *refusal) {
	l := *cl.limits.Load()
	release = func() {}
	if l.Limiter == nil {
		return release, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if l.RequestsPerSecond > 0 {
		allowed, retry, err := l.Limiter.Allow(ctx, key, l.RequestsPerSecond, l.Burst)
		if err == nil && !allowed {
			return nil, &refusal{retry, fmt.Sprintf("rate limit exceeded (%g requests per second, bursts of %d); retry in %s", l.RequestsPerSecond, l.Burst, retry.Round(time.Millisecond))}
		}
		if err != nil {
			cl.log.Debug("rate limiter unavailable; request let through", "err", err)
		}
	}
	if l.ConcurrentCalls > 0 && isCall(m) {
		rel, allowed, err := l.Limiter.Acquire(ctx, key, l.ConcurrentCalls, l.CallTTL)
		switch {
		case err != nil:
			cl.log.Debug("concurrency limiter unavailable; request let through", "err", err)
		case !allowed:
			return nil, &refusal{time.Second, fmt.Sprintf("too many calls in flight (at most %d at once); retry when one finishes", l.ConcurrentCalls)}
		default:
			release = rel
		}
	}
	return release, nil
}

func isCall(m jsonrpc.Message) bool {
	switch m.Method() {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

var (
	_ Limiter = (*state.Memory)(nil)
	_ Limiter = (*state.Redis)(nil)
)

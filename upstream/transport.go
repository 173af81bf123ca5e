// Package upstream connects the gateway to upstream MCP servers: a stdio
// child process, a Streamable HTTP endpoint, or a legacy HTTP+SSE (2024-11-05)
// endpoint. It frames messages, runs the transport-level parts of the
// protocol (sessions, resumption, re-initialization, shutdown) and performs
// the handshake (see [Dial]): the server/discover probe that tells a modern
// (stateless, 2026-07-28) upstream from a legacy one, and for a legacy one
// the initialize handshake. It knows nothing of downstream clients: messages
// travel as raw JSON-RPC bytes with upstream ids.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

const (
	// defaultMaxMessageBytes bounds one stdout line, one SSE event or one
	// HTTP JSON body when Spec.MaxMessageBytes is zero.
	defaultMaxMessageBytes = 16 << 20
	// defaultShutdownGrace is each of the two waits of the stdio shutdown
	// sequence when Spec.ShutdownGrace is zero.
	defaultShutdownGrace = 2 * time.Second
	// queueLen bounds the messages read from an upstream but not yet taken
	// by Read. A full queue blocks the producing reader (back-pressure);
	// nothing is dropped.
	queueLen = 256
)

// Spec describes how to reach one upstream MCP server. Exactly one of
// Command or URL is set.
type Spec struct {
	// Name identifies the upstream in logs and error messages.
	Name string

	// Command, Args, Env and Dir describe a stdio child process. Env holds
	// the variables the child gets on top of a minimal environment (PATH,
	// HOME, locale, TMPDIR); the gateway's own environment is not inherited.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// EnvPassthrough names more of the gateway's environment variables the
	// child may inherit (a trailing '*' matches a prefix). It is an explicit
	// opt-in: the gateway's secrets stay out of children by default.
	EnvPassthrough []string

	// URL is a Streamable HTTP endpoint; the legacy HTTP+SSE transport is
	// tried when the endpoint rejects the initialize POST with 400, 404 or
	// 405. Headers are sent on every HTTP request; they often carry
	// credentials and are never logged.
	URL     string
	Headers map[string]string

	// RequestHeaders, when set, adds headers to every HTTP request, from the context of the write that caused it
	// (or of Connect, for the connection's own requests): W3C trace context, credentials that depend on the
	// caller. It runs after Headers and before the protocol's own headers, which it cannot override.
	RequestHeaders func(ctx context.Context, h http.Header) error

	// HTTPClient sends the HTTP requests. Nil means a client of our own with
	// no overall timeout, because SSE streams are long-lived.
	HTTPClient *http.Client

	// MaxMessageBytes limits one stdout line, one SSE event or one HTTP JSON
	// body. Zero means 16 MiB.
	MaxMessageBytes int

	// ShutdownGrace is, for a stdio child, the wait after closing stdin
	// before SIGTERM and again after SIGTERM before SIGKILL. Zero means 2s.
	ShutdownGrace time.Duration

	// Logger receives the transport's logs, always with the attribute
	// "upstream"=Name. Nil means slog.Default().
	Logger *slog.Logger

	// Protocol selects the protocol era: ProtocolAuto ("" means the same),
	// ProtocolLegacy or ProtocolModern. Auto probes with server/discover on
	// the first Dial and remembers the answer in the Transport; see [Dial].
	Protocol string

	// Shared tells that one upstream session serves every client (session: shared). With Protocol auto, a
	// shared stdio upstream that speaks both eras is spoken to in the legacy era (see ProtocolAuto).
	Shared bool
}

func (s Spec) maxMessageBytes() int {
	if s.MaxMessageBytes > 0 {
		return s.MaxMessageBytes
	}
	return defaultMaxMessageBytes
}

func (s Spec) shutdownGrace() time.Duration {
	if s.ShutdownGrace > 0 {
		return s.ShutdownGrace
	}
	return defaultShutdownGrace
}

func (s Spec) logger() *slog.Logger {
	l := s.Logger
	if l == nil {
		l = slog.Default()
	}
	return l.With("upstream", s.Name)
}

// Connection is a framed, bidirectional message channel to one upstream
// session (cf. the Go SDK's mcp.Connection).
type Connection interface {
	// Read returns the next message from the upstream. Once the connection
	// is finished (the child exited, the HTTP session ended for good, or
	// Close was called) it returns an error, which wraps io.EOF for a clean
	// end. Read is called from one goroutine.
	Read(ctx context.Context) (Incoming, error)

	// Write sends one JSON-RPC message (request, notification or
	// response), parsed: a connection reads what it needs from the parsed
	// message instead of scanning it again. Its bytes must stay unchanged
	// until Write returns. It is safe for concurrent use.
	//
	// Over HTTP, Write of a request returns as soon as the POST has been
	// handed to the transport; the response and everything the server sends
	// on that POST's stream arrive through Read. If the POST fails, a
	// JSON-RPC error response for that request id (code -32603) is
	// synthesized and delivered through Read, so the caller never waits
	// forever.
	//
	// To a modern (stateless) upstream, requests get the _meta the era
	// requires (see [Dial]). Over HTTP, an error status that carries a
	// JSON-RPC error arrives as that error; notifications/cancelled aborts
	// the named request's POST instead of being sent, and nothing more
	// arrives for that request; other notifications and responses are
	// dropped.
	Write(ctx context.Context, msg jsonrpc.Message) error

	// Close ends the session and releases everything.
	Close() error
}

// Param is a tools/call argument mirrored in a header: the full header name (Mcp-Param-{Name}) and the
// argument's value as a string, before the header encoding.
type Param struct {
	Header string
	Value  string
}

// paramWriter is a Connection that sends a request's mirrored arguments as headers: the modern HTTP one.
type paramWriter interface {
	WriteParams(ctx context.Context, msg jsonrpc.Message, params []Param) error
}

// WriteRequest is Write for a request with arguments mirrored in Mcp-Param-* headers. Connections that have no
// headers (stdio, the legacy eras) send the request as Write does.
func (c *Conn) WriteRequest(ctx context.Context, msg jsonrpc.Message, params []Param) error {
	if pw, ok := c.Connection.(paramWriter); ok && len(params) > 0 {
		return pw.WriteParams(ctx, msg, params)
	}
	return c.Write(ctx, msg)
}

// errNotMessage is Write's error for a message that is not one (the zero Message): a caller's bug, refused
// rather than sent as an empty body or taken for a response.
var errNotMessage = errors.New("not a JSON-RPC message")

// writeBuilt sends a message the gateway built itself (jsonrpc.AppendRequest and its kin).
func writeBuilt(ctx context.Context, conn Connection, raw []byte) error {
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		return fmt.Errorf("a message the gateway built: %w", err)
	}
	return conn.Write(ctx, m)
}

// Incoming is one message read from an upstream.
type Incoming struct {
	// Msg is the message; it owns its bytes.
	Msg jsonrpc.Message

	// Related is the raw JSON-RPC id of the request whose HTTP response
	// stream carried this message: a server→client request or notification
	// sent "in relation to" that request, or the response itself. It is nil
	// for stdio, the standalone GET stream and the legacy SSE stream.
	Related []byte

	// Err, for an error response the transport made itself because the
	// request could not be sent (a refused credential, a lost connection),
	// is that failure, for errors.Is and errors.As; nil otherwise.
	Err error
}

// A Preempter takes messages on a connection's reader, before they queue for Read (cf. jsonrpc2's Preempter).
// Preempt reports whether it took in; what it does not take goes to Read. It must not block: the connection
// reads nothing more until it returns.
type Preempter interface {
	Preempt(in Incoming) bool
}

// preemptible is a Connection that offers messages to a Preempter: stdio.
type preemptible interface {
	Preempt(p Preempter)
}

// Preempt makes p take what the connection offers it on its reader, where the transport offers anything: a
// stdio child's responses, in order with everything else it sends. Other connections deliver everything
// through Read. Call it from the goroutine that calls Read, when done with everything Read returned.
func (c *Conn) Preempt(p Preempter) {
	if pc, ok := c.Connection.(preemptible); ok {
		pc.Preempt(p)
	}
}

// Transport creates connections to one upstream.
type Transport interface {
	// Connect starts a new upstream session. The context bounds the
	// connecting only, not the connection's lifetime. The returned
	// Connection has not been initialized; see [Dial].
	Connect(ctx context.Context) (Connection, error)
}

// NewTransport validates spec and returns a *CommandTransport (Command set)
// or an *HTTPTransport (URL set).
func NewTransport(spec Spec) (Transport, error) {
	if err := checkProtocol(spec.Protocol); err != nil {
		return nil, fmt.Errorf("upstream %s: %w", spec.Name, err)
	}
	switch {
	case spec.Command != "" && spec.URL != "":
		return nil, fmt.Errorf("upstream %s: both command and url are set", spec.Name)
	case spec.Command != "":
		if len(spec.Headers) > 0 || spec.HTTPClient != nil {
			return nil, fmt.Errorf("upstream %s: headers and http client apply only to url upstreams", spec.Name)
		}
		return &CommandTransport{spec: spec}, nil
	case spec.URL != "":
		if len(spec.Args) > 0 || len(spec.Env) > 0 || spec.Dir != "" {
			return nil, fmt.Errorf("upstream %s: args, env and dir apply only to command upstreams", spec.Name)
		}
		u, err := url.Parse(spec.URL)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: bad url: %w", spec.Name, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("upstream %s: url must be absolute http or https", spec.Name)
		}
		for k := range spec.Headers {
			if !validHeaderName(k) {
				return nil, fmt.Errorf("upstream %s: invalid header name %q", spec.Name, k)
			}
		}
		return newHTTPTransport(spec, u), nil
	default:
		return nil, fmt.Errorf("upstream %s: neither command nor url is set", spec.Name)
	}
}

// validHeaderName reports whether k is an RFC 9110 token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c < 0x80 && c > 0x20 && !isHeaderSeparator(c):
		default:
			return false
		}
	}
	return true
}

func isHeaderSeparator(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}', 0x7f:
		return true
	}
	return false
}

// errClosed is wrapped by the error Read and Write return after Close; it
// wraps io.EOF because a Close is a clean end.
var errClosed = fmt.Errorf("connection closed: %w", io.EOF)

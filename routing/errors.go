package routing

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"net"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/switchboard-mcp/switchboard/upstream"
)

// publicReasoner is an error that says itself why, in words a client may read: a credential source's refusal
// (auth.RefusedError: an identity provider that will not grant this person access).
type publicReasoner interface {
	error
	PublicReason() string
}

// publicReason says why an upstream failed in words a client may read: the kind of failure, never the error's
// own text, which carries internal URLs and addresses (`Post "http://10.0.3.7:9000/mcp": dial tcp …`) and often
// repeats the upstream's name. The whole error goes to the gateway's log, where the operator finds the URL.
func publicReason(err error) string {
	var dnsErr *net.DNSError
	var certErr *x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var execErr *exec.Error
	var public publicReasoner
	switch {
	case err == nil:
		return "connection lost"
	case errors.As(err, &public):
		return public.PublicReason()
	case errors.Is(err, context.DeadlineExceeded):
		return "it did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the connection was closed"
	case errors.As(err, &dnsErr):
		return "its host name does not resolve"
	case errors.As(err, &certErr), errors.As(err, &hostErr):
		return "its TLS certificate is not trusted"
	case errors.As(err, &execErr), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return "its command could not be started"
	case errors.Is(err, errSessionClosed):
		return "the client session ended"
	case errors.Is(err, upstream.ErrInitRejected):
		return "it refused the gateway's initialize"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "it did not answer in time"
	}
	var se *upstream.StatusError
	if errors.As(err, &se) {
		return "it answered HTTP " + strconv.Itoa(se.Code)
	}
	return "it could not be reached (the gateway's log has the details)"
}

// unavailableError reports an upstream that cannot take a request now: its last connection attempt failed. Its
// text names the upstream and the kind of failure, and is safe to show a client; Err has the whole story.
type unavailableError struct {
	Upstream string
	Err      error
}

func (e *unavailableError) Error() string {
	return "upstream " + strconv.Quote(e.Upstream) + " is unavailable: " + publicReason(e.Err)
}

func (e *unavailableError) Unwrap() error { return e.Err }

// UnknownUpstreamError reports a name no configured upstream has (admin operations).
type UnknownUpstreamError struct{ Name string }

func (e *UnknownUpstreamError) Error() string { return "no upstream named " + strconv.Quote(e.Name) }

// removedError reports an upstream a reload removed while a client still used it.
type removedError struct{ Upstream string }

func (e *removedError) Error() string {
	return "upstream " + strconv.Quote(e.Upstream) + " was removed from the configuration"
}

// instanceLimitError reports a per-client upstream at its maxInstances: a new client session must wait for one
// to close.
type instanceLimitError struct {
	Upstream string
	Max      int
}

func (e *instanceLimitError) Error() string {
	return "upstream " + strconv.Quote(e.Upstream) + " has reached its limit of " + strconv.Itoa(e.Max) +
		" per-client sessions; try again later or raise maxInstances"
}

// notConnectedError reports an upstream session with no connection at the moment: it is being re-established,
// or its client session closed. Err, when set, says why the wait for one ended.
type notConnectedError struct {
	Upstream string
	Err      error
}

func (e *notConnectedError) Error() string {
	msg := "upstream " + strconv.Quote(e.Upstream) + " is not connected"
	if e.Err != nil {
		msg += ": " + publicReason(e.Err)
	}
	return msg
}

func (e *notConnectedError) Unwrap() error { return e.Err }

// upstreamError reports an upstream's error answer to one of the gateway's own requests (a list, a
// subscription, a log level).
type upstreamError struct {
	Upstream, Method string
	Message          string // the upstream's error message
}

func (e *upstreamError) Error() string {
	return "upstream " + strconv.Quote(e.Upstream) + " refused " + e.Method + ": " + e.Message
}

// errSessionClosed: the client session ended while a link was being made for it.
var errSessionClosed = errors.New("the session has ended")

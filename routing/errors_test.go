package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestUnavailableErrorHidesURLs: what a client reads of an upstream's failure names the upstream once and the
// kind of failure, never the internal URL or address the transport's error carries.
func TestUnavailableErrorHidesURLs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: a real "connection refused"
	_, refused := http.Post("http://"+addr+"/mcp?key=secret", "application/json", strings.NewReader("{}"))
	_, noHost := http.Get("http://no-such-host.invalid/mcp")
	_, noCmd := exec.Command("/no/such/switchboard-upstream").Output()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"refused", fmt.Errorf("upstream files: %w", refused), "connection refused"},
		{"DNS", noHost, "does not resolve"},
		{"command", noCmd, "could not be started"},
		{"timeout", fmt.Errorf("dial: %w", context.DeadlineExceeded), "did not answer in time"},
		{"other", errors.New(`Post "http://10.0.3.7:9000/mcp": weird`), "could not be reached"},
		{"a credential refused", fmt.Errorf("initialize: Post \"http://10.0.3.7:9000/mcp\": %w", refusedGrant{}), "the identity provider refused to grant access (access_denied)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the failure to classify did not happen")
			}
			msg := (&unavailableError{Upstream: "files", Err: tc.err}).Error()
			if !strings.Contains(msg, tc.want) || strings.Count(msg, "files") != 1 {
				t.Errorf("%q: want the upstream named once and %q", msg, tc.want)
			}
			for _, leak := range []string{addr, "10.0.3.7", "http://", "secret", "no-such-host"} {
				if strings.Contains(msg, leak) {
					t.Errorf("%q shows %q", msg, leak)
				}
			}
		})
	}
}

// refusedGrant is a credential source's refusal that says why in public words, as auth.RefusedError does.
type refusedGrant struct{}

func (refusedGrant) Error() string { return "id-jag refused by https://idp.example/token?secret" }
func (refusedGrant) PublicReason() string {
	return "the identity provider refused to grant access (access_denied)"
}

// TestTypedErrors: routing's errors are told apart with errors.As, name their upstream once, and read as a
// sentence a client can act on.
func TestTypedErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&UnknownUpstreamError{Name: "gh"}, `no upstream named "gh"`},
		{&removedError{Upstream: "gh"}, `upstream "gh" was removed from the configuration`},
		{&instanceLimitError{Upstream: "gh", Max: 3}, `upstream "gh" has reached its limit of 3 per-client sessions; try again later or raise maxInstances`},
		{&notConnectedError{Upstream: "gh"}, `upstream "gh" is not connected`},
		{&notConnectedError{Upstream: "gh", Err: errSessionClosed}, `upstream "gh" is not connected: the client session ended`},
		{&notConnectedError{Upstream: "gh", Err: fmt.Errorf("wait: %w", context.DeadlineExceeded)}, `upstream "gh" is not connected: it did not answer in time`},
		{&upstreamError{Upstream: "gh", Method: "logging/setLevel", Message: "no"}, `upstream "gh" refused logging/setLevel: no`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%T: %q, want %q", c.err, got, c.want)
		}
		if n := strings.Count(c.err.Error(), `"gh"`); n != 1 {
			t.Errorf("%T names the upstream %d times: %q", c.err, n, c.err.Error())
		}
		wrapped := fmt.Errorf("context: %w", c.err)
		target := reflect.New(reflect.TypeOf(c.err)).Interface()
		if !errors.As(wrapped, target) {
			t.Errorf("errors.As does not find %T through a wrap", c.err)
		}
	}
}

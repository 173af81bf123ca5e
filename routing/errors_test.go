package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the failure to classify did not happen")
			}
			msg := (&UnavailableError{Upstream: "files", Err: tc.err}).Error()
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

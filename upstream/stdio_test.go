package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// sdkStdioSpec runs this test binary as the Go SDK test server over stdio.
// The SDK server is dual-era; these tests exercise the legacy era
// (initialize, server→client requests), so they skip the probe. The modern
// era has tests of its own (modern_test.go).
func sdkStdioSpec(log *logCapture) Spec {
	return Spec{
		Protocol:        ProtocolLegacy,
		Name:            "sdk-stdio",
		Command:         os.Args[0],
		Env:             map[string]string{envTestServer: "sdk"},
		MaxMessageBytes: 4096,
		ShutdownGrace:   5 * time.Second,
		Logger:          slog.New(log),
	}
}

func mustTransport(t *testing.T, spec Spec) Transport {
	t.Helper()
	tr, err := NewTransport(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func mustDial(t *testing.T, spec Spec, hello ClientHello) *Conn {
	t.Helper()
	c, err := Dial(waitCtx(t), mustTransport(t, spec), hello)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// request builds a request with an integer id, as the gateway mints them.
func request(id int, method, params string) jsonrpc.Message {
	var p []byte
	if params != "" {
		p = []byte(params)
	}
	return mustParse(jsonrpc.AppendRequest(nil, strconv.AppendInt(nil, int64(id), 10), method, p))
}

// mustParse parses a message a test built; it panics on a message that is not one.
func mustParse(raw []byte) jsonrpc.Message {
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		panic(err)
	}
	return m
}

// readResponse reads until the response with the given id, returning it and
// everything read before it.
func readResponse(t *testing.T, c Connection, id int) (Incoming, []Incoming) {
	t.Helper()
	want := strconv.Itoa(id)
	var before []Incoming
	for {
		in, err := c.Read(waitCtx(t))
		if err != nil {
			t.Fatalf("Read: %v (before: %s)", err, describe(before))
		}
		if in.Msg.Kind() == jsonrpc.KindResponse && string(in.Msg.ID()) == want {
			return in, before
		}
		before = append(before, in)
	}
}

func describe(ins []Incoming) string {
	var b strings.Builder
	for _, in := range ins {
		fmt.Fprintf(&b, "[%s related=%s] ", in.Msg.Raw(), in.Related)
	}
	return b.String()
}

func roundTrip(t *testing.T, c Connection, id int, method, params string) (Incoming, []Incoming) {
	t.Helper()
	if err := c.Write(waitCtx(t), request(id, method, params)); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, c, id)
}

// waitGoroutines waits until the goroutine count is back to at most n. It
// fails only if that never happens, printing the stacks.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	ctx := waitCtx(t)
	for runtime.NumGoroutine() > n {
		select {
		case <-ctx.Done():
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutine leak: %d > %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// processGone reports whether pid no longer exists (a zombie waiting for a
// non-reaping init counts as gone: it no longer runs).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesized command name.
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// groupMembers lists the live (non-zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		// After the command name: state ppid pgrp ...
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGroupGone waits until no live process is left in group pgid.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	ctx := waitCtx(t)
	for len(groupMembers(pgid)) > 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("process group %d still has live members %v", pgid, groupMembers(pgid))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	ctx := waitCtx(t)
	for !processGone(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process %d still exists", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func stdioPID(t *testing.T, c Connection) int {
	t.Helper()
	if cc, ok := c.(*Conn); ok {
		c = cc.Connection
	}
	sc, ok := c.(*stdioConn)
	if !ok {
		t.Fatalf("not a stdio connection: %T", c)
	}
	return sc.pid
}

func TestStdioSDKServer(t *testing.T) {
	before := runtime.NumGoroutine()
	log := newLogCapture()
	conn := mustDial(t, sdkStdioSpec(log), ClientHello{})
	pid := stdioPID(t, conn)

	if got := conn.Server.ProtocolVersion; got != protocol.LatestLegacy {
		t.Errorf("protocol version = %q, want %q", got, protocol.LatestLegacy)
	}
	if !bytes.Contains(conn.Server.ServerInfo, []byte(`"testserver"`)) {
		t.Errorf("serverInfo = %s", conn.Server.ServerInfo)
	}

	tests := []struct {
		name       string
		method     string
		params     string
		wantResult string // substring of the response
		wantBefore int    // messages expected before the response
	}{
		{"tools/list", "tools/list", `{}`, `"name":"echo"`, 0},
		{"call", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, `echo: hi`, 0},
		{"pretty-printed request", "tools/call", "{\n  \"name\": \"echo\",\n  \"arguments\": {\"text\": \"two\\nlines\"}\n}", `echo: two\nlines`, 0},
		{"progress", "tools/call", `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"tok"}}`, `done`, 3},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, before := roundTrip(t, conn, i+1, tt.method, tt.params)
			if !bytes.Contains(resp.Msg.Result(), []byte(tt.wantResult)) {
				t.Errorf("response %s does not contain %s", resp.Msg.Raw(), tt.wantResult)
			}
			if len(before) != tt.wantBefore {
				t.Errorf("got %d messages before the response, want %d: %s", len(before), tt.wantBefore, describe(before))
			}
			for _, in := range before {
				if in.Msg.Method() != "notifications/progress" || !bytes.Contains(in.Msg.Params(), []byte(`"progressToken":"tok"`)) {
					t.Errorf("unexpected message %s", in.Msg.Raw())
				}
				if in.Related != nil {
					t.Errorf("stdio message has Related %s", in.Related)
				}
			}
		})
	}

	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if log.has("SIGTERM") {
		t.Error("a well-behaved child needed SIGTERM; closing stdin should suffice")
	}
	if _, err := conn.Read(waitCtx(t)); !errors.Is(err, io.EOF) {
		t.Errorf("Read after Close = %v, want an error wrapping io.EOF", err)
	}
	if err := conn.Write(waitCtx(t), request(99, "ping", "")); err == nil {
		t.Error("Write after Close succeeded")
	}
	if !processGone(pid) {
		t.Errorf("child %d still exists after Close", pid)
	}
	waitGoroutines(t, before)
}

func TestStdioBadOutputIsSkipped(t *testing.T) {
	log := newLogCapture()
	conn := mustDial(t, sdkStdioSpec(log), ClientHello{})
	defer conn.Close()

	resp, before := roundTrip(t, conn, 1, "tools/call", `{"name":"junk"}`)
	if !bytes.Contains(resp.Msg.Result(), []byte("after junk")) {
		t.Errorf("response = %s", resp.Msg.Raw())
	}
	if len(before) != 0 {
		t.Errorf("junk reached Read: %s", describe(before))
	}
	checks := []struct {
		name string
		f    func(logRecord) bool
	}{
		{"non-JSON line", func(r logRecord) bool {
			return strings.Contains(r.Msg, "not a JSON-RPC message") && strings.Contains(r.Attrs["line"], "this is not JSON")
		}},
		{"overlong line", func(r logRecord) bool { return strings.Contains(r.Msg, "longer than the message limit") }},
		{"stderr", func(r logRecord) bool {
			return r.Msg == "stderr" && r.Attrs["line"] == "stderr-marker from the test server" && r.Attrs["upstream"] == "sdk-stdio"
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { log.waitFor(t, c.f) })
	}
	// The connection still works.
	if resp, _ := roundTrip(t, conn, 2, "tools/call", `{"name":"echo","arguments":{"text":"still"}}`); !bytes.Contains(resp.Msg.Result(), []byte("echo: still")) {
		t.Errorf("response = %s", resp.Msg.Raw())
	}
}

func TestStdioCrashMidCall(t *testing.T) {
	before := runtime.NumGoroutine()
	log := newLogCapture()
	conn := mustDial(t, sdkStdioSpec(log), ClientHello{})
	pid := stdioPID(t, conn)
	if err := conn.Write(waitCtx(t), request(1, "tools/call", `{"name":"crash"}`)); err != nil {
		t.Fatal(err)
	}
	var err error
	for err == nil {
		var in Incoming
		in, err = conn.Read(waitCtx(t))
		if err == nil {
			t.Errorf("unexpected message %s", in.Msg.Raw())
		}
	}
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "sdk-stdio") {
		t.Errorf("Read error = %q, want the exit status and the upstream name", err)
	}
	if errors.Is(err, io.EOF) {
		t.Errorf("a crash must not look like a clean end: %v", err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("Read error does not wrap the exit error: %v", err)
	}
	waitProcessGone(t, pid)
	// No Close yet: every goroutine must have ended with the child.
	waitGoroutines(t, before)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStdioShutdown(t *testing.T) {
	tests := []struct {
		name        string
		command     string
		args        []string
		grace       time.Duration
		wantSIGTERM bool
		wantSIGKILL bool
	}{
		// The grace is generous where the child should exit by itself: a
		// slow start under -race must not look like a hung child.
		{"stdin close suffices", os.Args[0], nil, time.Minute, false, false},
		{"ignores stdin", "sleep", []string{"1000"}, 50 * time.Millisecond, true, false},
		{"ignores SIGTERM", "sh", []string{"-c", `trap "" TERM; sleep 1000; sleep 1000`}, 50 * time.Millisecond, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			log := newLogCapture()
			spec := Spec{
				Name:          "shutdown",
				Command:       tt.command,
				Args:          tt.args,
				Env:           map[string]string{envTestServer: "sdk"},
				ShutdownGrace: tt.grace,
				Logger:        slog.New(log),
			}
			c, err := mustTransport(t, spec).Connect(waitCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			pid := stdioPID(t, c)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := log.has("SIGTERM"); got != tt.wantSIGTERM {
				t.Errorf("SIGTERM sent = %v, want %v", got, tt.wantSIGTERM)
			}
			if got := log.has("SIGKILL"); got != tt.wantSIGKILL {
				t.Errorf("SIGKILL sent = %v, want %v", got, tt.wantSIGKILL)
			}
			if !processGone(pid) {
				t.Errorf("child %d still exists after Close", pid)
			}
			waitGroupGone(t, pid)
			waitGoroutines(t, before)
		})
	}
}

// TestStdioNoOrphans checks that the child's own children go with it, both
// when Close shuts it down and when it exits by itself.
func TestStdioNoOrphans(t *testing.T) {
	tests := []struct {
		name   string
		script string
		close  bool // Close before checking; else wait for Read to fail
	}{
		{"on Close", `sleep 1000 & echo "grandchild $!" >&2; wait`, true},
		{"on child exit", `sleep 1000 & echo "grandchild $!" >&2; read line; exit 0`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			log := newLogCapture()
			spec := Spec{Name: "orphans", Command: "sh", Args: []string{"-c", tt.script}, ShutdownGrace: 50 * time.Millisecond, Logger: slog.New(log)}
			c, err := mustTransport(t, spec).Connect(waitCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			pid := stdioPID(t, c)
			rec := log.waitFor(t, func(r logRecord) bool { return strings.HasPrefix(r.Attrs["line"], "grandchild ") })
			gpid, err := strconv.Atoi(strings.TrimPrefix(rec.Attrs["line"], "grandchild "))
			if err != nil {
				t.Fatal(err)
			}
			if tt.close {
				c.Close()
			} else {
				if err := c.Write(waitCtx(t), mustParse([]byte(`{"jsonrpc":"2.0","method":"x"}`))); err != nil {
					t.Fatal(err)
				}
				_, err := c.Read(waitCtx(t))
				if !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "status 0") {
					t.Errorf("Read error = %v, want a clean exit wrapping io.EOF", err)
				}
			}
			waitProcessGone(t, pid)
			waitProcessGone(t, gpid)
			c.Close()
			waitGoroutines(t, before)
		})
	}
}

// TestStdioEnvAndDir checks what a child sees of the gateway's environment: a secret there must not reach it
// (an MCP server's tools can hand their environment to a client), what the spec passes through or sets must.
func TestStdioEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SWITCHBOARD_CURSOR_SECRET", "gateway-secret")
	t.Setenv("SWITCHBOARD_INHERITED", "from-gateway")
	t.Setenv("ACME_TOKEN", "acme-token")
	t.Setenv("PATH", os.Getenv("PATH"))
	tests := []struct {
		name        string
		passthrough []string
		want        string // the child's echo of $SWITCHBOARD_CURSOR_SECRET/$SWITCHBOARD_INHERITED/$ACME_TOKEN/$SWITCHBOARD_OVERRIDE/PATH set?/$(pwd)
	}{
		{"minimal", nil, "///from-spec/path/" + dir},
		{"exact name", []string{"SWITCHBOARD_INHERITED"}, "/from-gateway//from-spec/path/" + dir},
		{"prefix", []string{"ACME_*"}, "//acme-token/from-spec/path/" + dir},
		{"override wins over passthrough", []string{"SWITCHBOARD_OVERRIDE"}, "///from-spec/path/" + dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SWITCHBOARD_OVERRIDE", "from-gateway")
			log := newLogCapture()
			spec := Spec{
				Name:           "env",
				Command:        "sh",
				Args:           []string{"-c", `echo "$SWITCHBOARD_CURSOR_SECRET/$SWITCHBOARD_INHERITED/$ACME_TOKEN/$SWITCHBOARD_OVERRIDE/${PATH:+path}/$(pwd)" >&2; read line`},
				Env:            map[string]string{"SWITCHBOARD_OVERRIDE": "from-spec"},
				EnvPassthrough: tt.passthrough,
				Dir:            dir,
				Logger:         slog.New(log),
			}
			c, err := mustTransport(t, spec).Connect(waitCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			log.waitFor(t, func(r logRecord) bool { return r.Attrs["line"] == tt.want })
		})
	}
}

func TestDialHandshake(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr *regexp.Regexp // nil: success
	}{
		{"ping and log before the answer", map[string]string{"RAW_PING": "1", "RAW_VERSION": "2025-06-18"}, nil},
		{"older version accepted", map[string]string{"RAW_VERSION": "2024-11-05"}, nil},
		{"unsupported version", map[string]string{"RAW_VERSION": "1999-01-01"}, regexp.MustCompile(`upstream raw: .*"1999-01-01".*not support`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{envTestServer: "raw"}
			for k, v := range tt.env {
				env[k] = v
			}
			log := newLogCapture()
			tr := mustTransport(t, Spec{Name: "raw", Command: os.Args[0], Env: env, Logger: slog.New(log), ShutdownGrace: time.Second})
			conn, err := Dial(waitCtx(t), tr, ClientHello{})
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr.MatchString(err.Error()) {
					t.Fatalf("Dial error = %v, want match %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if conn.Server.ProtocolVersion != tt.env["RAW_VERSION"] {
				t.Errorf("protocol version = %q", conn.Server.ProtocolVersion)
			}
			// The raw server answers every request with its method name.
			resp, before := roundTrip(t, conn, 1, "tools/list", "")
			if !bytes.Contains(resp.Msg.Result(), []byte("tools/list")) || len(before) != 0 {
				t.Errorf("response %s, before %s", resp.Msg.Raw(), describe(before))
			}
		})
	}
}

func TestStdioWriteContext(t *testing.T) {
	// A child that never reads stdin: the pipe fills up and a write blocks
	// until its context ends.
	spec := Spec{Name: "stuck", Command: "sleep", Args: []string{"1000"}, ShutdownGrace: 50 * time.Millisecond, Logger: slog.New(newLogCapture())}
	c, err := mustTransport(t, spec).Connect(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	big := request(1, "x", `{"pad":"`+strings.Repeat("p", 1<<20)+`"}`)
	errc := make(chan error, 1)
	go func() { errc <- c.Write(ctx, big) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Write = %v, want context.Canceled", err)
	}
}

// TestStdioOversizedAnswer: an answer over the message limit fails its call at once, with an error naming the
// limit, instead of leaving it to wait for its timeout; the connection goes on.
func TestStdioOversizedAnswer(t *testing.T) {
	spec := Spec{Name: "raw", Command: os.Args[0], Env: map[string]string{envTestServer: "raw", "RAW_VERSION": "2025-11-25", "RAW_BIG": "8192"},
		MaxMessageBytes: 4096, Logger: slog.New(newLogCapture()), ShutdownGrace: time.Second}
	conn, err := Dial(waitCtx(t), mustTransport(t, spec), ClientHello{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in, _ := roundTrip(t, conn, 7, "big", "")
	if code, _ := in.Msg.ErrorCode(); code != protocol.CodeInternalError || !strings.Contains(string(in.Msg.Raw()), "maxMessageBytes") {
		t.Fatalf("answer = %s, want -32603 naming the message limit", in.Msg.Raw())
	}
	if in, _ := roundTrip(t, conn, 8, "ping", ""); in.Msg.Error() != nil {
		t.Errorf("after the oversized answer: %s", in.Msg.Raw())
	}
}

func TestLeadingID(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{`{"jsonrpc":"2.0","id":17,"result":{"pad":"xxxx`, `17`},
		{`{"id":"switchboard-init-1","result":{`, `"switchboard-init-1"`},
		{`{"result":{"id":3,"pad":"xx`, ``},                     // nested: not the message's id
		{`{"jsonrpc":"2.0","method":"x","id":4,"params":{`, ``}, // a request of the upstream's own
		{`{"jsonrpc":"2.0","id":123`, ``},                       // the number may go on
		{`{"jsonrpc":"2.0","result":{"pad":"x`, ``},
		{`{"jsonrpc":"2.0","id":"a\"b","result":`, `"a\"b"`},
	} {
		if got := string(leadingID([]byte(tc.prefix))); got != tc.want {
			t.Errorf("leadingID(%s) = %s, want %s", tc.prefix, got, tc.want)
		}
	}
}

// TestStdioChildDiesWithGateway: a child that ignores stdin EOF does not outlive a gateway killed with SIGKILL,
// which has no chance to stop it (Linux: Pdeathsig).
func TestStdioChildDiesWithGateway(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), envTestServer+"=parent")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Wait() }() // killed below
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		parent.Process.Kill()
		t.Fatalf("the stand-in gateway did not report its child: %q %v", line, err)
	}
	if processGone(pid) {
		t.Fatalf("child %d is not running", pid)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitProcessGone(t, pid)
}

package state

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a real redis-server the test starts on a loopback port, without persistence.
type redisServer struct {
	t    *testing.T
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	runs int
}

// needRedisServer finds redis-server, skipping the test when it is missing, unless SWITCHBOARD_E2E=require.
func needRedisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found on PATH (apt-get install redis-server, or .ci/setup as root)"
		if os.Getenv("SWITCHBOARD_E2E") == "require" {
			t.Fatalf("%s (SWITCHBOARD_E2E=require)", msg)
		}
		t.Skipf("%s; set SWITCHBOARD_E2E=require to make this a failure", msg)
	}
	return bin
}

// startRedisServer starts redis-server on a free loopback port; t.Cleanup stops it.
func startRedisServer(t *testing.T) *redisServer {
	s := &redisServer{t: t, bin: needRedisServer(t), dir: t.TempDir()}
	var err error
	for range 5 { // a free port can be taken between looking and binding
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start runs the server on s.port and waits until it answers PING.
func (s *redisServer) start() error {
	s.runs++
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.runs))
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", logPath)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // owned by the server: ends with the process
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pingRaw(s.addr()) == nil {
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server on port %d did not answer within 10s", s.port)
		}
	}
}

// stop ends the server (SIGTERM, then SIGKILL) and waits for it.
func (s *redisServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// pingRaw speaks just enough RESP to see the server answer.
func pingRaw(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// waitBlocked returns once a connection of c's named name is blocked in the server's XREAD (CLIENT LIST: flag b,
// last command xread): a Tail is waiting, and what is appended from now on wakes it.
func waitBlocked(t *testing.T, c redis.UniversalClient, name string) {
	t.Helper()
	eventually(t, 5*time.Second, "a Tail of client "+name+" blocked in XREAD", func() bool {
		list, err := c.ClientList(t.Context()).Result()
		if err != nil {
			return false
		}
		for line := range strings.Lines(list) {
			f := map[string]string{}
			for _, kv := range strings.Fields(line) {
				k, v, _ := strings.Cut(kv, "=")
				f[k] = v
			}
			if f["name"] == name && strings.Contains(f["flags"], "b") && f["cmd"] == "xread" {
				return true
			}
		}
		return false
	})
}

var prefixSeq atomic.Int64

// TestRedisServer runs the conformance suite against a real redis-server, each test under its own prefix and
// client name, with short TTLs and real time: advance is a real sleep, which TTLs in another process need.
func TestRedisServer(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	runSuite(t, func(t *testing.T, opts ...Option) *harness {
		const ttl = time.Second
		name := fmt.Sprintf("sbtest%d", prefixSeq.Add(1))
		newRedis := func(t *testing.T, c redis.UniversalClient, opts ...Option) *Redis {
			r := NewRedis(c, name+":", append([]Option{WithSessionTTL(ttl), WithEventLog(0, ttl)}, opts...)...)
			t.Cleanup(r.Shutdown)
			return r
		}
		c := newNamedClient(t, srv.addr(), name)
		return &harness{
			Store:      newRedis(t, c, opts...),
			ttl:        ttl,
			advance:    wallSleep,
			approxTrim: true,
			awaitTail:  func(t *testing.T) func() { return func() { waitBlocked(t, c, name) } },
			// Same prefix, another client (named apart, so that waitBlocked never takes its connections).
			second: func(t *testing.T, opts ...Option) Store {
				return newRedis(t, newNamedClient(t, srv.addr(), name+"-second"), opts...)
			},
			shared: true,
		}
	}, false)
}

// TestRedisServerRestart stops redis-server under a store and starts it again on the same port: operations fail
// with ErrUnavailable while it is down and work again after, with the same client and store; a subscription
// made before the restart receives again; a Tail waiting when it stops returns an error.
func TestRedisServerRestart(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	ctx := t.Context()
	c := newNamedClient(t, srv.addr(), "restart")
	r := NewRedis(c, "")
	t.Cleanup(r.Shutdown)

	if err := r.Create(ctx, SessionRecord{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	first, err := r.Append(ctx, "s", 1, []byte("m0"))
	if err != nil {
		t.Fatal(err)
	}
	ch, cancel, err := r.Subscribe(ctx, "session:s")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := r.Publish(ctx, "session:s", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ch, "before the restart"); string(m) != "before" {
		t.Fatalf("got %q", m)
	}
	if ok, _, err := r.Allow(ctx, "k", 100, 100); err != nil || !ok { // loads the script
		t.Fatalf("Allow: %v, %v", ok, err)
	}

	tail := make(chan error, 1)
	go func() {
		_, err := r.Tail(ctx, "s", 1, first, 20*time.Second)
		tail <- err
	}()
	waitBlocked(t, c, "restart")
	srv.stop()
	select {
	case err := <-tail:
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("Tail when Redis stopped: %v, want ErrUnavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Tail did not return within 5s of Redis stopping")
	}
	checkUnavailable(t, r)

	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ping after the restart", func() bool { return r.Ping(ctx) == nil })
	// Without persistence the data is gone; the store works again, scripts are reloaded by EVAL.
	if _, err := r.Get(ctx, "s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after a restart without persistence: %v, want ErrNotFound", err)
	}
	if err := r.Create(ctx, SessionRecord{ID: "s"}); err != nil {
		t.Fatalf("Create after the restart: %v", err)
	}
	if err := r.Update(ctx, "s", func(rec *SessionRecord) error { rec.LogLevel = "debug"; return nil }); err != nil {
		t.Fatalf("Update after the restart: %v", err)
	}
	if _, err := r.Append(ctx, "s", 1, []byte("m1")); err != nil {
		t.Fatalf("Append after the restart: %v", err)
	}
	if ok, _, err := r.Allow(ctx, "k", 100, 100); err != nil || !ok {
		t.Fatalf("Allow after the restart: %v, %v", ok, err)
	}
	release, ok, err := r.Acquire(ctx, "k", 1, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire after the restart: %v, %v", ok, err)
	}
	release()
	// The subscription from before is restored by the bus's reader: once the server has it again, a message
	// published is delivered.
	eventually(t, 10*time.Second, "the subscription from before the restart back in the server", func() bool {
		n, err := c.PubSubNumSub(ctx, DefaultPrefix+"bus:session:s").Result()
		return err == nil && n[DefaultPrefix+"bus:session:s"] == 1
	})
	if err := r.Publish(ctx, "session:s", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ch, "the subscription from before the restart"); string(m) != "after" {
		t.Fatalf("got %q", m)
	}
	// And new subscriptions work.
	ch2, cancel2, err := r.Subscribe(ctx, "replica:r1")
	if err != nil {
		t.Fatalf("Subscribe after the restart: %v", err)
	}
	defer cancel2()
	if err := r.Publish(ctx, "replica:r1", []byte("inbox")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ch2, "new subscription after the restart"); string(m) != "inbox" {
		t.Fatalf("got %q", m)
	}
}

// TestRedisServerPubSubAcrossStores checks delivery between two stores (two replicas) on one server.
func TestRedisServerPubSubAcrossStores(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	ctx := t.Context()
	a := NewRedis(newClient(t, srv.addr()), "")
	bc := newNamedClient(t, srv.addr(), "b")
	b := NewRedis(bc, "")
	t.Cleanup(a.Shutdown)
	t.Cleanup(b.Shutdown)
	ch, cancel, err := b.Subscribe(ctx, "replica:b")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := a.Publish(ctx, "replica:b", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ch, "across stores"); string(m) != "hi" {
		t.Fatalf("got %q", m)
	}
	// A session created on one replica is served by the other; its events too.
	if err := a.Create(ctx, SessionRecord{ID: "s", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	rec, err := b.Get(ctx, "s")
	if err != nil || rec.Principal != "alice" {
		t.Fatalf("Get on the other replica: %+v, %v", rec, err)
	}
	res := make(chan []Event, 1)
	go func() {
		evs, _ := b.Tail(ctx, "s", 1, "", 10*time.Second)
		res <- evs
	}()
	waitBlocked(t, bc, "b")
	id, err := a.Append(ctx, "s", 1, []byte("event"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-res:
		if len(evs) != 1 || evs[0].ID != id {
			t.Fatalf("Tail on the other replica: %v", evs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Tail on the other replica did not wake")
	}
}

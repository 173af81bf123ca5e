package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// pipeConn is a stdioConn whose stdin is a pipe the test reads: the writer alone, without a child.
func pipeConn(t *testing.T) (*stdioConn, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return &stdioConn{name: "pipe", stdin: w, stop: make(chan struct{})}, r
}

// fillPipe writes to w until the pipe is full, and returns what it wrote.
func fillPipe(t *testing.T, w *os.File) int {
	t.Helper()
	// The deadline only ends the write once the pipe is full, which it is at once.
	if err := w.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	defer w.SetWriteDeadline(time.Time{})
	n, err := w.Write([]byte(strings.Repeat("f", 1<<20)))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("filling the pipe: %d, %v", n, err)
	}
	return n
}

// waitQueued waits until n writers wait behind the leader.
func waitQueued(c *stdioConn, n int) {
	for {
		c.w.mu.Lock()
		got := len(c.w.waiters)
		c.w.mu.Unlock()
		if got == n {
			return
		}
		runtime.Gosched()
	}
}

// TestStdinQueue: writes that arrive while one is blocked queue behind it and go out together, in order, each on
// its own line; one whose context ends while queued is withdrawn; a leader that gives up before a byte went out
// leaves the others to the next leader, first in line; the pipe's framing is intact throughout.
func TestStdinQueue(t *testing.T) {
	c, r := pipeConn(t)
	filled := fillPipe(t, c.stdin) // the next write blocks with nothing written

	write := func(ctx context.Context, id int) chan error {
		errc := make(chan error, 1)
		go func() { errc <- c.Write(ctx, request(id, "tools/call", `{"name":"x"}`)) }()
		return errc
	}
	leadCtx, cancelLead := context.WithCancel(t.Context())
	lead := write(leadCtx, 1)
	waitQueued(c, 0)
	for { // the leader is writing
		c.w.mu.Lock()
		writing := c.w.writing
		c.w.mu.Unlock()
		if writing {
			break
		}
		runtime.Gosched()
	}
	second := write(t.Context(), 2)
	waitQueued(c, 1)
	withdrawnCtx, withdraw := context.WithCancel(t.Context())
	withdrawn := write(withdrawnCtx, 3)
	waitQueued(c, 2)
	fourth := write(t.Context(), 4)
	waitQueued(c, 3)

	withdraw()
	if err := <-withdrawn; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn write: %v", err)
	}
	cancelLead()
	if err := <-lead; !errors.Is(err, context.Canceled) {
		t.Fatalf("the leader's write: %v", err)
	}

	br := bufio.NewReader(r)
	if _, err := io.CopyN(io.Discard, br, int64(filled)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{2, 4} {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		m, err := jsonrpc.Parse([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil || string(m.ID()) != strconv.Itoa(want) {
			t.Fatalf("line %q, want the request of id %d", line, want)
		}
	}
	for _, errc := range []chan error{second, fourth} {
		if err := <-errc; err != nil {
			t.Errorf("queued write: %v", err)
		}
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if c.w.writing || len(c.w.pending) != 0 || len(c.w.waiters) != 0 || c.w.err != nil {
		t.Errorf("writer left writing %v, %d bytes, %d waiters, err %v", c.w.writing, len(c.w.pending), len(c.w.waiters), c.w.err)
	}
}

// TestStdinConcurrentWrites: many writers at once, each message arrives whole, on its own line, exactly once
// (run with -race).
func TestStdinConcurrentWrites(t *testing.T) {
	c, r := pipeConn(t)
	const writers, each = 8, 200
	got := make(chan map[string]int, 1)
	go func() {
		seen := map[string]int{}
		sc := bufio.NewScanner(r)
		for len(seen) < writers*each && sc.Scan() {
			m, err := jsonrpc.Parse(sc.Bytes())
			if err != nil {
				seen["bad: "+sc.Text()]++
				continue
			}
			seen[string(m.ID())]++
		}
		got <- seen
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := c.Write(t.Context(), request(w*each+i, "tools/call", `{"name":"x","arguments":{"pad":"`+strings.Repeat("p", i)+`"}}`)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := <-got
	for id := range writers * each {
		if seen[strconv.Itoa(id)] != 1 {
			t.Fatalf("id %d seen %d times (%d lines)", id, seen[strconv.Itoa(id)], len(seen))
		}
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct lines, want %d: %v", len(seen), writers*each, fmt.Sprint(seen)[:200])
	}
}

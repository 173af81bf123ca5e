package main

// The stdio scenario's comparator (issue 20): a simple Go stdio-to-HTTP bridge, one upstream per route and nothing
// else. It starts one stdio child, initializes it once, answers every client's initialize from that, and forwards
// each request with its id rewritten, matching the answers by id. No aggregation, no progress, no cancellation, no
// session state beyond a set of ids: the least a proxy in front of a shared stdio server can do, so that what the
// gateway costs on top of it shows.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// bridgeMsg is a JSON-RPC message as the bridge sees it: the members it reads or rewrites, the rest kept raw.
type bridgeMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// stdioBridge forwards HTTP requests to one stdio child.
type stdioBridge struct {
	wmu   sync.Mutex // one writer of the child's stdin at a time: a line is one message
	stdin *bufio.Writer

	mu       sync.Mutex
	next     uint64
	pending  map[uint64]chan bridgeMsg
	sessions map[string]bool

	initResult json.RawMessage
}

// send writes a request to the child with a fresh id and returns the channel its answer arrives on.
func (br *stdioBridge) send(method string, params json.RawMessage) (uint64, chan bridgeMsg, error) {
	ch := make(chan bridgeMsg, 1)
	br.mu.Lock()
	br.next++
	id := br.next
	br.pending[id] = ch
	br.mu.Unlock()
	line, err := json.Marshal(bridgeMsg{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatUint(id, 10)), Method: method, Params: params})
	if err == nil {
		err = br.writeLine(line)
	}
	if err != nil {
		br.forget(id)
		return 0, nil, err
	}
	return id, ch, nil
}

func (br *stdioBridge) forget(id uint64) {
	br.mu.Lock()
	delete(br.pending, id)
	br.mu.Unlock()
}

func (br *stdioBridge) writeLine(line []byte) error {
	br.wmu.Lock()
	defer br.wmu.Unlock()
	if _, err := br.stdin.Write(line); err != nil {
		return err
	}
	if err := br.stdin.WriteByte('\n'); err != nil {
		return err
	}
	return br.stdin.Flush()
}

// readLoop delivers the child's answers by id until its stdout ends. Requests and notifications from the child are
// dropped: the fixture sends none, and this bridge would not know whom to send them to.
func (br *stdioBridge) readLoop(r io.Reader) {
	sc := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := sc.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m bridgeMsg
			if json.Unmarshal(line, &m) == nil && m.Method == "" {
				if id, perr := strconv.ParseUint(string(m.ID), 10, 64); perr == nil {
					br.mu.Lock()
					ch := br.pending[id]
					delete(br.pending, id)
					br.mu.Unlock()
					if ch != nil {
						ch <- m
					}
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// call sends a request and waits for its answer.
func (br *stdioBridge) call(ctx context.Context, method string, params json.RawMessage) (bridgeMsg, error) {
	id, ch, err := br.send(method, params)
	if err != nil {
		return bridgeMsg{}, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		br.forget(id)
		return bridgeMsg{}, ctx.Err()
	}
}

func writeRPC(w http.ResponseWriter, m bridgeMsg) {
	b, err := json.Marshal(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (br *stdioBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodDelete:
		br.mu.Lock()
		delete(br.sessions, sid)
		br.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		http.Error(w, "POST or DELETE", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m bridgeMsg
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "bad JSON-RPC message", http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		sid = hex.EncodeToString(raw[:])
		br.mu.Lock()
		br.sessions[sid] = true
		br.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		writeRPC(w, bridgeMsg{JSONRPC: "2.0", ID: m.ID, Result: br.initResult})
		return
	}
	br.mu.Lock()
	known := br.sessions[sid]
	br.mu.Unlock()
	if !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if m.ID == nil { // a notification: the child was initialized once, by the bridge; the rest go through as they are
		if m.Method != "notifications/initialized" {
			_ = br.writeLine(body)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	ans, err := br.call(ctx, m.Method, m.Params)
	if err != nil {
		writeRPC(w, bridgeMsg{JSONRPC: "2.0", ID: m.ID, Error: json.RawMessage(`{"code":-32603,"message":` + strconv.Quote(err.Error()) + `}`)})
		return
	}
	ans.ID = m.ID
	writeRPC(w, ans)
}

// cmdStdioBridge: switchboard-bench stdiobridge [-listen ADDR]. Its child is this binary's stdio upstream.
func cmdStdioBridge(args []string) int {
	fl := flag.NewFlagSet("stdiobridge", flag.ContinueOnError)
	addr := fl.String("listen", "127.0.0.1:0", "address to listen on")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	cmd := exec.Command(self, "upstream")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	br := &stdioBridge{stdin: bufio.NewWriterSize(in, 64<<10), pending: map[uint64]chan bridgeMsg{}, sessions: map[string]bool{}}
	read := make(chan struct{})
	go func() { defer close(read); br.readLoop(out) }()
	// The reader ends when the child's stdout does: close its stdin, then join the reader, then the child.
	defer func() {
		_ = in.Close()
		<-read
		_ = cmd.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ans, err := br.call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"`+clientProtocol+`","capabilities":{},"clientInfo":{"name":"switchboard-bench-stdiobridge","version":"1.0.0"}}`))
	if err == nil && ans.Result == nil {
		err = fmt.Errorf("initialize: %s", ans.Error)
	}
	if err == nil {
		err = br.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	br.initResult = ans.Result
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	announce(ln.Addr())
	if err := serveUntilSignal(ln, br); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "stdiobridge:", err)
		return 1
	}
	return 0
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EStdioModernStart (issue 31, item 7): a 2026-07-28 client that sends tools/list first, as the TS SDK v2
// client and Mastra do, over `switchboard stdio --endpoint`, in front of server-everything per client and
// server-memory shared, the latter slow to start (its process waits on a FIFO the test opens). The client's
// server/discover, sent after the tools/list, is answered while memory is still starting (before the test lets
// it run: a discover that waited for every upstream would never come); the tools/list, sent before memory was
// up, is answered once it is, with memory's tools in it.
func TestE2EStdioModernStart(t *testing.T) {
	missing := e2eGate(t)
	root := repoRoot(t)
	node, everythingJS, memoryJS := nodePeers(t, root, missing)
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "memory-go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf(`log:
  level: debug
upstreams:
  - name: everything
    command: %[1]s
    args: [%[2]s, "stdio"]
    session: per-client
  - name: memory
    command: /bin/sh
    args: ["-c", "read _ < \"$0\"; exec \"$@\"", %[3]s, %[1]s, %[4]s]
    session: shared
    env: {MEMORY_FILE_PATH: %[5]s}
endpoints:
  - name: team
    include: ["everything__*", "memory__*"]
`, strconv.Quote(node), strconv.Quote(everythingJS), strconv.Quote(fifo), strconv.Quote(memoryJS), strconv.Quote(filepath.Join(tmp, "memory.jsonl"))))

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"lists-first","version":"1"}}`
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var errb bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := stdio([]string{"--config", cfg, "--endpoint", "team"}, stdinR, stdoutW, &errb)
		stdoutW.Close()
		exited <- code
	}()
	answers := make(chan json.RawMessage, 4)
	go func() {
		defer close(answers)
		sc := bufio.NewScanner(stdoutR)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			answers <- json.RawMessage(slices.Clone(sc.Bytes()))
		}
	}()
	next := func(what string) map[string]json.RawMessage {
		t.Helper()
		select {
		case a, ok := <-answers:
			if !ok {
				t.Fatalf("stdout ended waiting for %s; log:\n%s", what, errb.String())
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(a, &m); err != nil {
				t.Fatalf("not JSON: %s", a)
			}
			return m
		case <-time.After(60 * time.Second): // a failure guard, not a timed assertion
			t.Fatalf("no answer for %s within a minute", what)
			return nil
		}
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdinW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	opened := false
	open := func() { // lets memory's process start; blocks until it opens the FIFO
		if !opened {
			opened = true
			if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
				t.Errorf("opening the gate: %v", err)
			}
		}
	}
	t.Cleanup(func() {
		open()
		stdinW.Close()
		for range answers {
		}
		if code := <-exited; code != exitOK {
			t.Errorf("stdio exited %d", code)
		}
	})

	send(`{"jsonrpc":"2.0","id":"list-1","method":"tools/list","params":{` + meta + `}}`)
	send(`{"jsonrpc":"2.0","id":"discover-1","method":"server/discover","params":{` + meta + `}}`)
	first := next("server/discover")
	if string(first["id"]) != `"discover-1"` || first["result"] == nil {
		t.Fatalf("the first answer is %s: want server/discover's result, while memory is still starting", mustJSON(first))
	}
	open()
	list := next("tools/list")
	if string(list["id"]) != `"list-1"` {
		t.Fatalf("the second answer is %s, want tools/list's", mustJSON(list))
	}
	var res struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal(list["result"], &res); err != nil {
		t.Fatalf("tools/list answered %s", mustJSON(list))
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"everything__echo", "memory__create_entities", "memory__read_graph"} {
		if !slices.Contains(names, want) {
			t.Errorf("the first tools/list lacks %s: %s", want, strings.Join(names, " "))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

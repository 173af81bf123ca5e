package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStdioSIGTERM: `switchboard stdio` ends on SIGTERM while its client keeps stdin open (a client whose
// closing of stdin did not end the server escalates to SIGTERM: "On POSIX systems, forced termination typically
// escalates from SIGTERM to SIGKILL"), with status 0, instead of waiting for a line that will never come.
func TestStdioSIGTERM(t *testing.T) {
	if os.Getenv("SWITCHBOARD_E2E") == "off" || testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSwitchboard(t)
	path := writeConfig(t, "upstreams: []\n")
	cmd := exec.Command(bin, "stdio", "--config", path)
	cmd.Stderr = io.Discard
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("ping answered %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("switchboard stdio ended with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("switchboard stdio did not end on SIGTERM while stdin stayed open")
	}
}

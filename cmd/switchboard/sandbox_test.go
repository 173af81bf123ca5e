package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
)

// TestSandboxWorkerCommand: the switchboard binary serves as its own sandbox worker.
func TestSandboxWorkerCommand(t *testing.T) {
	bin := buildSwitchboard(t)
	e := codemode.NewEngine(codemode.Options{Worker: []string{bin, sandboxWorkerCommand}, Workers: 1})
	defer e.Close()
	res, err := e.Run(context.Background(), codemode.Run{Code: `const n: number = 6; console.log("in a worker"); return n * 7`})
	if err != nil || string(res.Value) != "42" || res.Output != "in a worker\n" {
		t.Fatalf("run: %v %q %s", err, res.Output, res.Value)
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	if strings.Contains(string(out), sandboxWorkerCommand) {
		t.Errorf("the usage shows the hidden %s", sandboxWorkerCommand)
	}
}

package main

import (
	"io"
	"os"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
)

// sandboxWorkerCommand is the hidden subcommand the gateway re-executes itself as to run code-mode scripts
// (docs/code-mode.md): a sandbox worker reading framed JSON on stdin. It is not in the usage: people do not
// run it.
const sandboxWorkerCommand = "sandbox-worker"

// sandboxWorker runs a sandbox worker on the process's stdin and stdout.
func sandboxWorker(args []string, stderr io.Writer) int {
	return codemode.WorkerMain(args, os.Stdin, os.Stdout, stderr)
}

package upstream

import "syscall"

// childAttr puts a child in a process group of its own (signals sent to the group reach its own children too)
// and has the kernel kill it if the gateway dies without stopping it (kill -9, an OOM kill): a child that ignores
// stdin EOF would otherwise outlive the gateway. Pdeathsig fires when the OS thread that started the child exits;
// Go ends a thread only under a goroutine that exits while locked to it, which nothing starting children does.
// Its own children (a server under npx or uvx) are not covered: see docs/operations.md.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

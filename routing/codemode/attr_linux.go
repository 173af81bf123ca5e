package codemode

import "syscall"

// workerAttr puts a worker in a process group of its own and has the kernel kill it if the gateway dies.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

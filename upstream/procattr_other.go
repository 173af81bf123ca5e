//go:build !linux

package upstream

import "syscall"

// childAttr puts a child in a process group of its own, so that signals sent to the group reach its own children
// too. Only Linux can have the kernel kill it when the gateway dies (procattr_linux.go).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

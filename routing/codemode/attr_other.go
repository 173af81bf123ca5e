//go:build !linux

package codemode

import "syscall"

// workerAttr has nothing to add outside Linux.
func workerAttr() *syscall.SysProcAttr { return nil }

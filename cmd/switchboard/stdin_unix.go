//go:build unix

package main

import (
	"os"
	"syscall"
)

// pollableStdin returns stdin as a file the Go runtime polls, so that a shutdown (SIGTERM, which a stdio client
// sends when closing stdin did not end us) can interrupt the pending read: gateway.ServeStdio sets a read
// deadline. Only for a pipe or a socket, whose non-blocking mode concerns our end alone; a terminal's mode is
// shared with the shell, so it is left as it is (and a read from it is not interrupted).
func pollableStdin() *os.File {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return os.Stdin
	}
	fd := int(os.Stdin.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "/dev/stdin") // non-blocking, so NewFile registers it with the poller
}

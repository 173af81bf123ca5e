//go:build unix

package codemode

import (
	"fmt"
	"syscall"
)

// limitProcess sets the worker's OS bounds before it runs any script: its data segment (the Go heap's
// writable mappings; the address space would also count the runtime's PROT_NONE reservations), no files
// written, few descriptors.
func limitProcess(memory int64) error {
	limits := []struct {
		res  int
		name string
		n    uint64
	}{
		{syscall.RLIMIT_FSIZE, "RLIMIT_FSIZE", 0},
		{syscall.RLIMIT_NOFILE, "RLIMIT_NOFILE", 32},
	}
	if !raceDetector { // a race build's shadow memory counts against it: only Go's soft limit holds there
		limits = append(limits, struct {
			res  int
			name string
			n    uint64
		}{syscall.RLIMIT_DATA, "RLIMIT_DATA", uint64(memory)})
	}
	for _, l := range limits {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.n, Max: l.n}); err != nil {
			return fmt.Errorf("setting %s: %w", l.name, err)
		}
	}
	return nil
}

//go:build !linux

package main

import "errors"

// setupPin refuses -pin where there is no CPU affinity to set.
func setupPin() (pin cpuPin, restore func() error, err error) {
	return cpuPin{}, nil, errors.New("-pin: CPU affinity is set on Linux only")
}

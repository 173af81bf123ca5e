//go:build !unix

package main

import "os"

// pollableStdin is stdin as it is: only Unix pipes are made pollable (see stdin_unix.go).
func pollableStdin() *os.File { return os.Stdin }

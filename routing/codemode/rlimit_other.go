//go:build !unix

package codemode

// limitProcess has no OS bounds to set here: the worker's memory is bounded by the Go runtime's soft limit only.
func limitProcess(int64) error { return nil }

//go:build race

package codemode

// raceDetector is true in a build with the race detector, whose shadow memory mappings count against
// RLIMIT_DATA: a worker built so cannot hold the memory bound (it would fail before its first script).
const raceDetector = true

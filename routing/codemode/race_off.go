//go:build !race

package codemode

// raceDetector is false in an ordinary build (see race_on.go).
const raceDetector = false

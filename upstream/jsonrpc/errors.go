package jsonrpc

import (
	"errors"
	"fmt"
)

// Sentinel errors; errors returned by this package wrap one of them so that
// callers can pick the JSON-RPC error code with errors.Is.
var (
	// ErrParse means the bytes are not valid JSON (code -32700).
	ErrParse = errors.New("jsonrpc: parse error")
	// ErrInvalidRequest means the bytes are valid JSON but not a valid
	// JSON-RPC 2.0 message (code -32600).
	ErrInvalidRequest = errors.New("jsonrpc: invalid request")
)

// syntaxErr is built only on the failure path, so its allocation does not
// affect the zero-allocation success path.
func syntaxErr(off int, what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrParse, what, off)
}

func invalidErr(what string) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, what)
}

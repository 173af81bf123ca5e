package protocol

// JSON-RPC error codes, one meaning each. JSON-RPC 2.0 defines -32700 and -32600..-32603 and leaves
// -32000..-32099 to implementations; MCP takes some of those, and the gateway uses the rest as listed here.
// Package auth, which imports nothing of the project, keeps its own copies of CodeUnavailable, CodeForbidden
// and CodeUnauthorized; a test in cmd/switchboard holds them equal.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeUnavailable: the gateway cannot serve the request now (rate limited, a store or an issuer down);
	// the message says when or why to try again.
	CodeUnavailable = -32000
	// CodeRequestTimeout: the upstream did not answer in time (the SDKs' RequestTimeout).
	CodeRequestTimeout = -32001
	// CodeResourceNotFound: resources/read of an unknown URI in the legacy era; the modern era answers
	// CodeInvalidParams instead.
	CodeResourceNotFound = -32002
	// CodeForbidden: the token lacks a scope the request needs.
	CodeForbidden = -32003
	// CodeUnauthorized: no bearer token, or an invalid one.
	CodeUnauthorized = -32004

	// Codes of the modern era (-32020..-32099 are reserved for the specification).

	// CodeHeaderMismatch: an Mcp-* header disagrees with the body, or is missing.
	CodeHeaderMismatch = -32020
	// CodeMissingCapability: the request needs a client capability it did not declare.
	CodeMissingCapability = -32021
	// CodeUnsupportedProtocolVersion: the request's protocol version is not one the server speaks.
	CodeUnsupportedProtocolVersion = -32022

	// CodeURLElicitationRequired: the call needs the user to complete a URL-mode elicitation first
	// (2025-11-25).
	CodeURLElicitationRequired = -32042
)

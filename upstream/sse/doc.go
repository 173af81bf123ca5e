// Package sse reads and writes Server-Sent Events streams as defined by the
// WHATWG HTML standard (section "Server-sent events"), for the MCP Streamable
// HTTP and legacy SSE transports.
//
// [Reader] decodes a stream with a bound on the size of one event, so a
// hostile upstream cannot make the gateway buffer without limit. [AppendEvent]
// and [AppendComment] encode events into a caller-supplied buffer without
// allocating, so that a hot forwarding loop can reuse one buffer.
package sse

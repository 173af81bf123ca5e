// Package jsonrpc scans, edits and builds JSON-RPC 2.0 messages without
// decoding them into Go values.
//
// The gateway forwards messages between clients and upstream MCP servers.
// Decoding and re-encoding every message would cost allocations and could
// change client-visible bytes (ids above 2^53, 1e400, escaped strings), so a
// message travels as its raw bytes plus the byte spans of its top-level
// members (see [Message]); rewriting an id, a progress token or a tool name
// splices bytes (see [Splice] and [Message.AppendWith]).
//
// # Validation
//
// [Parse] validates JSON syntax in a single pass with its own scanner. Its
// verdict agrees with encoding/json.Valid for every input that Valid rejects.
// Like encoding/json, bytes inside strings are not required to be valid UTF-8
// (they are forwarded unchanged; [Unquote] turns invalid bytes into U+FFFD),
// and nesting deeper than [MaxDepth] is rejected with [ErrParse] without
// recursion.
//
// # Ambiguous keys
//
// A peer decoding with encoding/json takes the last of duplicate keys and
// matches keys case-insensitively, so the gateway could see one member while
// the upstream acts on another. [Parse] therefore rejects duplicate top-level
// keys and keys that only case-fold to a JSON-RPC member name (for example
// "ID" or "Method"), and [Lookup] reports not found when the key it looks for
// is duplicated or has a case-folded twin in any object along the path.
//
// # Aliasing
//
// [Message.Raw], [Message.ID], [Message.Params], [Message.Result],
// [Message.Error] and the elements returned by [SplitBatch] alias the input;
// callers that reuse the input buffer must copy first. All Append functions
// follow the strconv convention: they append to dst and return the extended
// slice, allocating only when dst lacks capacity.
package jsonrpc

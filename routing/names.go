package routing

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxName is the strict limit the big clients enforce on tool names (^[a-zA-Z0-9_-]{1,64}$), tighter than the
// spec's 128 characters of [A-Za-z0-9_.-]. Emitting names that satisfy the strict form keeps every client working.
const maxName = 64

// nameBudget is the length exposed names must fit: Options.MaxToolNameLength, within [12, maxName]. Hosts show a
// tool under a prefix of their own (Claude Code: mcp__<server>__<tool>, and its API rejects names over 64
// characters), so the default leaves room for "mcp__switchboard__".
func (o *Options) nameBudget() int {
	n := o.MaxToolNameLength
	if n <= 0 {
		n = defaultMaxToolNameLength
	}
	return min(max(n, 12), maxName)
}

// exposedName returns the name a client sees for an upstream's item: prefix+name, made to satisfy the strict
// form within budget characters. A name that already does is kept as it is; otherwise characters outside
// [A-Za-z0-9_-] become '_', the name is cut to fit, and it ends in '_' plus a short hash of the original, so that
// two names that sanitise or cut alike stay distinct and the mapping is deterministic across restarts and
// replicas.
func exposedName(prefix, name string, budget int) string {
	full := prefix + name
	if len(full) <= budget && strictName(full) {
		return full
	}
	b := make([]byte, 0, budget)
	for i := 0; i < len(full); i++ {
		c := full[i]
		if !strictByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(b) > budget-len(suffix) {
		b = b[:budget-len(suffix)]
	}
	return string(b) + suffix
}

func strictName(s string) bool {
	if len(s) == 0 || len(s) > maxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strictByte(s[i]) {
			return false
		}
	}
	return true
}

func strictByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

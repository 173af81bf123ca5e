package routing

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxName is the strict limit the big clients enforce on tool names (^[a-zA-Z0-9_-]{1,64}$), tighter than the
// spec's 128 characters of [A-Za-z0-9_.-]. Emitting names that satisfy the strict form keeps every client working.
const maxName = 64

// exposedName returns the name a client sees for an upstream's item: prefix+name, made to satisfy the strict
// form. A name that already does is kept as it is; otherwise characters outside [A-Za-z0-9_-] become '_' and the
// name ends in '_' plus a short hash of the original, so that two names that sanitise alike stay distinct and the
// mapping is deterministic across restarts and replicas.
func exposedName(prefix, name string) string {
	full := prefix + name
	if strictName(full) {
		return full
	}
	b := make([]byte, 0, maxName)
	for i := 0; i < len(full); i++ {
		c := full[i]
		if !strictByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(b) > maxName-len(suffix) {
		b = b[:maxName-len(suffix)]
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

// RejectedNames lists the exposed tool names of the current catalog that a host in Options.Hosts would reject.
func (r *Router) RejectedNames() []RejectedName {
	return nil // TODO(issue 14 item 11): implemented in names.go
}

// Package protocol is the vocabulary of the Model Context Protocol that every layer of the gateway shares: the
// protocol versions and their eras, method names, the reserved _meta keys, the HTTP header names and the
// JSON-RPC error codes, each with one meaning.
//
// It holds constants and pure functions only, and imports nothing of the project, so any package may use it.
// It sits under upstream because upstream is the lowest layer that needs it.
//
// The two eras have one word each. "legacy" is every revision up to 2025-11-25: a session made by initialize.
// "modern" is 2026-07-28 and later: no initialize and no session, every request carrying its version,
// capabilities and client identity in params._meta.
package protocol

// Protocol versions. A version is a date, so versions compare as strings.
const (
	V20241105 = "2024-11-05"
	V20250326 = "2025-03-26"
	V20250618 = "2025-06-18"
	V20251125 = "2025-11-25"
	V20260728 = "2026-07-28"

	// LatestLegacy is the newest revision of the legacy era: what the gateway offers in initialize on a
	// client's behalf when it has none of its own to offer (a modern client's calls to a legacy upstream).
	LatestLegacy = V20251125
	// Modern is the first revision of the modern era.
	Modern = V20260728
)

// Era is a protocol era.
type Era uint8

// The eras.
const (
	// Legacy is every revision up to 2025-11-25: initialize, sessions, the standalone GET stream.
	Legacy Era = iota
	// ModernEra is 2026-07-28 and later: stateless requests.
	ModernEra
)

// String names the era with its one word.
func (e Era) String() string {
	if e == ModernEra {
		return "modern"
	}
	return "legacy"
}

// EraOf returns the era a version belongs to.
func EraOf(version string) Era {
	if IsModern(version) {
		return ModernEra
	}
	return Legacy
}

// IsModern reports whether version belongs to the modern era.
func IsModern(version string) bool { return AtLeast(version, Modern) }

// AtLeast reports whether version is min or newer. Versions are dates in one format, so the comparison is a
// string one; an empty version is older than every revision.
func AtLeast(version, min string) bool { return version >= min }

// SupportedLegacy reports whether v is a legacy revision the gateway negotiates with initialize, on either
// side: 2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05.
func SupportedLegacy(v string) bool {
	switch v {
	case V20251125, V20250618, V20250326, V20241105:
		return true
	}
	return false
}

// Supported returns every version the gateway speaks, newest first: what server/discover lists and what an
// unsupported version's error names. It returns a new slice each time, so callers may keep or change it.
func Supported() []string {
	return []string{V20260728, V20251125, V20250618, V20250326, V20241105}
}

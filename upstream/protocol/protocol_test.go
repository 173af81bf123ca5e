package protocol

import (
	"cmp"
	"slices"
	"testing"
)

func TestEras(t *testing.T) {
	for _, c := range []struct {
		version string
		era     Era
		legacy  bool // negotiable with initialize
	}{
		{"", Legacy, false},
		{V20241105, Legacy, true},
		{V20250326, Legacy, true},
		{V20250618, Legacy, true},
		{V20251125, Legacy, true},
		{"2025-12-01", Legacy, false},
		{V20260728, ModernEra, false},
		{"2027-01-01", ModernEra, false},
	} {
		if got := EraOf(c.version); got != c.era {
			t.Errorf("EraOf(%q) = %v, want %v", c.version, got, c.era)
		}
		if got := SupportedLegacy(c.version); got != c.legacy {
			t.Errorf("SupportedLegacy(%q) = %v, want %v", c.version, got, c.legacy)
		}
	}
}

func TestSupported(t *testing.T) {
	s := Supported()
	if !slices.IsSortedFunc(s, func(a, b string) int { return cmp.Compare(b, a) }) || s[0] != Modern {
		t.Errorf("Supported() = %v, want newest first, starting with %s", s, Modern)
	}
	for _, v := range s[1:] {
		if !SupportedLegacy(v) {
			t.Errorf("Supported() lists %s, which SupportedLegacy refuses", v)
		}
	}
	s[0] = "changed"
	if Supported()[0] != Modern {
		t.Error("Supported() returned shared state")
	}
}

func TestCodesAreDistinct(t *testing.T) {
	codes := map[string]int{
		"ParseError": CodeParseError, "InvalidRequest": CodeInvalidRequest, "MethodNotFound": CodeMethodNotFound,
		"InvalidParams": CodeInvalidParams, "InternalError": CodeInternalError, "Unavailable": CodeUnavailable,
		"RequestTimeout": CodeRequestTimeout, "ResourceNotFound": CodeResourceNotFound, "Forbidden": CodeForbidden,
		"Unauthorized": CodeUnauthorized, "HeaderMismatch": CodeHeaderMismatch,
		"MissingCapability": CodeMissingCapability, "UnsupportedProtocolVersion": CodeUnsupportedProtocolVersion,
		"URLElicitationRequired": CodeURLElicitationRequired,
	}
	seen := map[int]string{}
	for name, code := range codes {
		if other, ok := seen[code]; ok {
			t.Errorf("Code%s and Code%s are both %d", name, other, code)
		}
		seen[code] = name
	}
}

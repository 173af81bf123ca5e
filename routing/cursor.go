package routing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// errBadCursor is answered with -32602, as the pagination page asks for an invalid cursor.
var errBadCursor = errors.New("invalid or expired cursor: list again from the start")

// cursorCodec mints and checks the gateway's opaque pagination cursors: the list kind, the catalog generation and
// the offset into the merged list, signed with an HMAC key that every replica shares (design §5). Clients must
// treat cursors as opaque; signing makes sure a forged one is rejected rather than trusted.
type cursorCodec struct{ key []byte }

const cursorMACLen = 16

// The endpoint a cursor was minted for is in its MAC, not in its bytes: a cursor of one endpoint is refused on
// another, and the cursor does not grow with the endpoint's name.
func (c cursorCodec) encode(kind listKind, gen uint64, offset int, endpoint string) string {
	var b [1 + 8 + 4 + cursorMACLen]byte
	b[0] = byte(kind)
	binary.BigEndian.PutUint64(b[1:9], gen)
	binary.BigEndian.PutUint32(b[9:13], uint32(offset))
	m := hmac.New(sha256.New, c.key)
	m.Write(b[:13])
	m.Write([]byte(endpoint))
	copy(b[13:], m.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// decode returns the offset a cursor points at, checking it was minted for this kind and generation.
func (c cursorCodec) decode(s string, kind listKind, gen uint64, endpoint string) (int, error) {
	var b [1 + 8 + 4 + cursorMACLen]byte
	// Check the length first: Decode writes as much as the input holds.
	if len(s) != base64.RawURLEncoding.EncodedLen(len(b)) {
		return 0, errBadCursor
	}
	if n, err := base64.RawURLEncoding.Decode(b[:], []byte(s)); err != nil || n != len(b) {
		return 0, errBadCursor
	}
	m := hmac.New(sha256.New, c.key)
	m.Write(b[:13])
	m.Write([]byte(endpoint))
	if !hmac.Equal(m.Sum(nil)[:cursorMACLen], b[13:]) {
		return 0, errBadCursor
	}
	if listKind(b[0]) != kind || binary.BigEndian.Uint64(b[1:9]) != gen {
		return 0, errBadCursor
	}
	return int(binary.BigEndian.Uint32(b[9:13])), nil
}

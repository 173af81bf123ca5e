// Package vault seals small secrets, such as each user's upstream OAuth
// tokens, for keeping in the state store: AES-256-GCM under a key chosen
// by id from a Keyring, so the key can be rotated without losing what was
// sealed under the old one.
//
// # Format
//
// A sealed blob describes itself, so it can be opened without knowing
// which key or which version of this package wrote it:
//
//	version (1 byte, 1) | key id length (1 byte) | key id | nonce (12 bytes) | ciphertext | tag (16 bytes)
//
// The header (version, key id length and key id) is authenticated along
// with the caller's associated data, so a blob whose key id is rewritten
// does not open even when two ids name the same key bytes.
//
// # Associated data
//
// Seal and Open take associated data (aad) that binds a blob to where it
// belongs, for example principal + "\x00" + upstream. A blob copied to
// another user's or another upstream's entry in the store then fails to
// open instead of handing one user's token to another. The encoding must
// be unambiguous: no two contexts may produce the same bytes.
//
// # Rotation
//
// Keys are rotated by id, with no downtime and no bulk re-encryption:
//
//  1. Add a new key (say k2) to the configured keys, alongside k1, and
//     deploy it to every replica while k1 is still current, so that every
//     replica can open what any other seals under k2.
//  2. Make k2 current. New blobs are sealed under k2; blobs under k1 still
//     open. Stale reports them, and the caller re-seals and stores a blob
//     the next time it opens it.
//  3. Once the longest-lived token that could still be sealed under k1 has
//     expired or been refreshed (the maximum refresh-token lifetime of the
//     upstreams), remove k1. A blob still under k1 then fails with
//     ErrUnknownKey, and the caller treats it as absent: the user connects
//     again.
//
// A key that may have leaked is rotated the same way but removed at once,
// accepting that users with blobs under it must connect again.
//
// # Keys
//
// A key is 32 random bytes (for example: openssl rand -base64 32) used for
// nothing else: in particular not the gateway's cursorSecret, nor any
// other MAC or cipher key, since sharing a key between constructions voids
// the guarantees of each. Random 96-bit nonces limit one key to about 2^32
// seals; per-user token sets come nowhere near that between rotations.
package vault

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrUnknownKey is returned by Open for a blob sealed under a key id the
// Keyring does not hold: usually a retired key.
var ErrUnknownKey = errors.New("vault: unknown key")

// ErrCorrupt is returned by Open for a blob that does not open: the wrong
// associated data, a changed or missing byte, or an unknown format
// version.
var ErrCorrupt = errors.New("vault: corrupt sealed data")

const (
	// version is the first byte of every blob this package writes.
	version = 1
	// KeySize is the length of every key: AES-256.
	KeySize = 32
	// maxKeyIDLen is the longest key id, kept short because every blob
	// carries its key id.
	maxKeyIDLen = 32
	// MaxPlaintext bounds what Seal accepts: far above any token set,
	// it keeps a state store entry small.
	MaxPlaintext = 1 << 20
)

// Keyring holds the keys that open sealed blobs, by id, and the current
// one that seals. It is immutable, so it is safe for concurrent use; a
// rotation builds a new Keyring.
type Keyring struct {
	current string
	sealers map[string]*Sealer
}

// NewKeyring returns a Keyring that seals under the key named current and
// opens blobs under any of keys. Key ids are 1 to 32 bytes of
// [A-Za-z0-9._-]; every key is exactly KeySize bytes. keys is not kept:
// the caller may clear its copy afterwards. Errors never include key
// bytes.
func NewKeyring(current string, keys map[string][]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("vault: no keys")
	}
	// Sorted, so that with several bad keys the error is always the same.
	ids := slices.Sorted(maps.Keys(keys))
	sealers := make(map[string]*Sealer, len(keys))
	for _, id := range ids {
		if !validID(id) {
			// An invalid id is not echoed: it may be key material
			// pasted in the wrong place.
			return nil, fmt.Errorf("vault: a key id is invalid: %s", idRule)
		}
		key := keys[id]
		if len(key) != KeySize {
			return nil, fmt.Errorf("vault: key %q is %d bytes, want %d", id, len(key), KeySize)
		}
		// The Sealer does not retain the caller's slice.
		sealer, err := NewSealer(key)
		if err != nil {
			return nil, fmt.Errorf("vault: key %q: %w", id, err)
		}
		sealers[id] = sealer
	}
	if !validID(current) {
		return nil, fmt.Errorf("vault: the current key id is invalid: %s", idRule)
	}
	if _, ok := sealers[current]; !ok {
		return nil, fmt.Errorf("vault: current key %q is not among the keys (%s)", current, strings.Join(ids, ", "))
	}
	return &Keyring{current: current, sealers: sealers}, nil
}

// Seal encrypts plaintext under the current key, bound to aad, in the
// format described in the package documentation. Each call draws a fresh
// random nonce, so sealing the same plaintext twice gives different
// blobs. It fails only for a plaintext over MaxPlaintext bytes.
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	if len(plaintext) > MaxPlaintext {
		return nil, fmt.Errorf("vault: seal: plaintext is %d bytes, at most %d allowed", len(plaintext), MaxPlaintext)
	}
	hdrLen := 2 + len(k.current)
	out := make([]byte, hdrLen, hdrLen+NonceSize+len(plaintext)+TagSize)
	out[0] = version
	out[1] = byte(len(k.current))
	copy(out[2:], k.current)
	// The Sealer writes nonce | ciphertext | tag after the header.
	return k.sealers[k.current].Seal(out, plaintext, authData(out, aad)), nil
}

// Open decrypts a blob made by Seal with whichever key its header names,
// checking it against aad. It fails with an error wrapping ErrUnknownKey
// when the Keyring lacks that key, and ErrCorrupt for anything else that
// does not open. Errors never include plaintext or key bytes.
func (k *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	id, hdrLen, err := parseHeader(sealed)
	if err != nil {
		return nil, fmt.Errorf("vault: open: %w", err)
	}
	sealer, ok := k.sealers[id]
	if !ok {
		return nil, fmt.Errorf("vault: open: sealed under key %q: %w", id, ErrUnknownKey)
	}
	body := sealed[hdrLen:]
	if len(body) < NonceSize+TagSize {
		return nil, fmt.Errorf("vault: open: %d bytes after the header, want at least %d: %w", len(body), NonceSize+TagSize, ErrCorrupt)
	}
	// The Sealer's plaintext never shares memory with the caller's blob.
	plaintext, err := sealer.Open(body, authData(sealed[:hdrLen], aad))
	if err != nil {
		// GCM's own error says nothing more; which of wrong aad,
		// tampering or truncation it was cannot be told apart.
		return nil, fmt.Errorf("vault: open under key %q: authentication failed (wrong context, or altered): %w", id, ErrCorrupt)
	}
	return plaintext, nil
}

// Stale reports whether sealed was sealed under a key other than the
// current one, so that the caller, having opened it, seals it again under
// the current key and stores the result. A blob whose header cannot be
// read is not stale: Open rejects it, and there is nothing to re-seal.
func (k *Keyring) Stale(sealed []byte) bool {
	id, _, err := parseHeader(sealed)
	return err == nil && id != k.current
}

// String names the keys and the current one, never their bytes. It and
// Format have value receivers so that a dereferenced Keyring prints
// safely too.
func (k Keyring) String() string {
	return fmt.Sprintf("vault.Keyring{current: %s, keys: %s}", k.current, strings.Join(slices.Sorted(maps.Keys(k.sealers)), ", "))
}

// Format prints String for every verb: fmt's default for a struct would
// walk into the ciphers, whose state begins with the key itself.
func (k Keyring) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprint(f, k.String())
}

// ParseKeys reads keys from their config form: comma-separated id:key
// entries, each key 32 bytes in standard or URL-safe base64, padded or
// not; spaces around entries are ignored. For example
// "k2:BASE64,k1:BASE64". Entries are numbered from 1 in errors, which
// never include key material or an invalid id (it may be key material in
// the wrong place).
func ParseKeys(spec string) (map[string][]byte, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("vault: no keys: want id:base64key[,id:base64key...]")
	}
	keys := map[string][]byte{}
	for i, entry := range strings.Split(spec, ",") {
		n := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("vault: key entry %d is empty", n)
		}
		id, b64, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("vault: key entry %d has no id: want id:base64key", n)
		}
		id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
		if !validID(id) {
			return nil, fmt.Errorf("vault: key entry %d: invalid id: %s", n, idRule)
		}
		if _, dup := keys[id]; dup {
			return nil, fmt.Errorf("vault: key entry %d: id %q appears twice", n, id)
		}
		key, err := decodeKey(b64)
		if err != nil {
			return nil, fmt.Errorf("vault: key entry %d (%q): %w", n, id, err)
		}
		keys[id] = key
	}
	return keys, nil
}

// idRule is what validID checks, in words for errors.
const idRule = "want 1 to 32 characters of A-Z a-z 0-9 . _ -"

// validID reports whether id is a usable key id: short, so every blob's
// header stays small, and printable, so it can appear in errors and logs.
func validID(id string) bool {
	if len(id) == 0 || len(id) > maxKeyIDLen {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decodeKey decodes one base64 key in any of the four common forms, since
// tools differ in which they print. Its errors carry no part of s: the
// standard library's would only give an offset, but saying which forms
// were tried is more use.
func decodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("the key is empty")
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("the key decodes to %d bytes, want %d (generate one with: openssl rand -base64 32)", len(key), KeySize)
		}
		return key, nil
	}
	return nil, errors.New("the key is not base64 (standard or URL-safe, padded or not)")
}

// parseHeader reads a blob's version and key id and returns the id and
// the header's length. Its errors wrap ErrCorrupt.
func parseHeader(sealed []byte) (id string, hdrLen int, err error) {
	if len(sealed) < 2 {
		return "", 0, fmt.Errorf("%d bytes, shorter than a header: %w", len(sealed), ErrCorrupt)
	}
	if sealed[0] != version {
		return "", 0, fmt.Errorf("format version %d, want %d: %w", sealed[0], version, ErrCorrupt)
	}
	n := int(sealed[1])
	if len(sealed) < 2+n {
		return "", 0, fmt.Errorf("key id of %d bytes cut short: %w", n, ErrCorrupt)
	}
	id = string(sealed[2 : 2+n])
	if !validID(id) {
		// Not echoed: these bytes are not a key id we could have written.
		return "", 0, fmt.Errorf("invalid key id: %w", ErrCorrupt)
	}
	return id, 2 + n, nil
}

// authData is what GCM authenticates besides the ciphertext: the header,
// then the caller's aad. The header has its own length inside it, so the
// split between the two is unambiguous.
func authData(header, aad []byte) []byte {
	return append(slices.Clip(header), aad...)
}

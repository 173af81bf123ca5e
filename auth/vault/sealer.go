package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// Sealer is the project's one AES-256-GCM construction: a random 96-bit nonce per seal, and what it seals laid out
// as nonce (NonceSize bytes) | ciphertext | tag (TagSize bytes). The Keyring seals with one per key (behind its
// own header); auth/browser's cookies and routing's requestState and exposed task ids with one each, in their own
// wrappings, which it leaves as they were written.
//
// It lives here, in a package that imports nothing of ours, because auth imports nothing outside auth and routing
// imports nothing above it: auth/vault is the one place both may import. routing imports no other part of auth.
//
// Random nonces limit one key to about 2^32 seals. A Sealer is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

const (
	// NonceSize and TagSize are GCM's standard sizes, which cipher.NewGCMWithRandomNonce uses.
	NonceSize = 12
	TagSize   = 16
)

// NewSealer returns a Sealer under key, which must be KeySize bytes. key is not kept.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("vault: key is %d bytes, want %d", len(key), KeySize)
	}
	// aes.NewCipher copies the key into its schedule, so the caller's slice is not retained.
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// DeriveSealer returns a Sealer under the key HKDF-SHA256 (RFC 5869) derives from secret for info, so that one
// secret can key several constructions, each with its own info.
func DeriveSealer(secret []byte, info string) *Sealer {
	key, err := hkdf.Key(sha256.New, secret, nil, info, KeySize)
	if err != nil {
		panic("vault: HKDF: " + err.Error()) // 32 bytes of SHA-256 output cannot be refused
	}
	s, err := NewSealer(key)
	if err != nil {
		panic(err.Error()) // a KeySize key cannot be refused
	}
	return s
}

// Seal appends to dst the sealing of plaintext bound to aad: nonce | ciphertext | tag. dst and plaintext must not
// overlap.
func (s *Sealer) Seal(dst, plaintext, aad []byte) []byte {
	return s.aead.Seal(dst, nil, plaintext, aad)
}

// Open returns the plaintext of what Seal made with the same aad, in memory of its own; any failure (too short,
// altered, another key or another aad) is ErrCorrupt, and which one is not said.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < NonceSize+TagSize {
		return nil, ErrCorrupt
	}
	plaintext, err := s.aead.Open(nil, nil, sealed, aad)
	if err != nil {
		return nil, ErrCorrupt
	}
	return plaintext, nil
}

// Format prints the type's name for every verb, as Keyring's does: fmt's default for a struct would walk into the
// cipher, whose state begins with the key itself.
func (Sealer) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprint(f, "vault.Sealer")
}

package vault_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// TestSealerWireFormat: what a Sealer seals is nonce | ciphertext | tag of plain AES-256-GCM, the layout that
// auth/browser's cookies and routing's requestState and task ids were written in before they shared it, so those
// already handed out still open, and theirs open with plain GCM.
func TestSealerWireFormat(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, vault.KeySize)
	s, err := vault.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	plain, aad := []byte("park.1.1700000000.bind.cmVwbGljYQ"), []byte("switchboard/v1/")

	// Sealed as routing did: its own random nonce, prepended.
	nonce := bytes.Repeat([]byte{1}, gcm.NonceSize())
	old := gcm.Seal(bytes.Clone(nonce), nonce, plain, aad)
	if got, err := s.Open(old, aad); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open(plain GCM's nonce|ciphertext|tag) = %q, %v", got, err)
	}

	sealed := s.Seal([]byte("hdr"), plain, aad)
	if !bytes.HasPrefix(sealed, []byte("hdr")) || len(sealed) != 3+vault.NonceSize+len(plain)+vault.TagSize {
		t.Fatalf("Seal appended %d bytes, want nonce, %d and tag", len(sealed)-3, len(plain))
	}
	body := sealed[3:]
	if got, err := gcm.Open(nil, body[:vault.NonceSize], body[vault.NonceSize:], aad); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("plain GCM opening Seal's output = %q, %v", got, err)
	}

	for name, c := range map[string]struct{ sealed, aad []byte }{
		"other aad": {body, []byte("other")},
		"short":     {body[:vault.NonceSize+vault.TagSize-1], aad},
		"altered":   {append(bytes.Clone(body[:len(body)-1]), body[len(body)-1]^1), aad},
	} {
		if _, err := s.Open(c.sealed, c.aad); !errors.Is(err, vault.ErrCorrupt) {
			t.Errorf("%s: Open error %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := vault.NewSealer(key[:16]); err == nil {
		t.Error("NewSealer took a 16-byte key")
	}
	if got := fmt.Sprintf("%v %+v %#v", *s, *s, *s); bytes.Contains([]byte(got), key[:4]) || got != "vault.Sealer vault.Sealer vault.Sealer" {
		t.Errorf("a Sealer prints as %q", got)
	}
}

// TestDeriveSealer: the key is HKDF-SHA256 of the secret for the info, as routing derived requestState's.
func TestDeriveSealer(t *testing.T) {
	t.Parallel()
	secret := []byte("cursor secret")
	key, _ := hkdf.Key(sha256.New, secret, nil, "switchboard requestState v2", 32)
	want, _ := vault.NewSealer(key)
	sealed := want.Seal(nil, []byte("x"), nil)
	if got, err := vault.DeriveSealer(secret, "switchboard requestState v2").Open(sealed, nil); err != nil || string(got) != "x" {
		t.Fatalf("DeriveSealer's Open = %q, %v", got, err)
	}
	if _, err := vault.DeriveSealer(secret, "other").Open(sealed, nil); err == nil {
		t.Fatal("a Sealer for another info opened it")
	}
}

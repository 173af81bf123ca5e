package vault_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// testKey is a fixed, distinct 32-byte key per name, so failures
// reproduce and keys never collide by accident.
func testKey(name string) []byte {
	sum := sha256.Sum256([]byte("vault test key " + name))
	return sum[:]
}

func newKeyring(t testing.TB, current string, ids ...string) *vault.Keyring {
	t.Helper()
	keys := map[string][]byte{}
	for _, id := range ids {
		keys[id] = testKey(id)
	}
	kr, err := vault.NewKeyring(current, keys)
	if err != nil {
		t.Fatalf("NewKeyring(%q, %v): %v", current, ids, err)
	}
	return kr
}

func seal(t testing.TB, kr *vault.Keyring, plaintext, aad []byte) []byte {
	t.Helper()
	sealed, err := kr.Seal(plaintext, aad)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return sealed
}

// secret is a plaintext that errors must never contain.
var secret = []byte(`{"access_token":"gho_s3cr3t-access","refresh_token":"ghr_s3cr3t-refresh"}`)

// aliceGitHub is associated data as the caller builds it.
var aliceGitHub = []byte("alice\x00github")

// checkOpenFails asserts that err is a failure to open, of the kind
// wanted, and leaks nothing of the plaintext.
func checkOpenFails(t *testing.T, got []byte, err error, want ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("Open succeeded (%d bytes); want an error", len(got))
	}
	if got != nil {
		t.Errorf("Open returned %d bytes alongside its error", len(got))
	}
	matched := false
	for _, w := range want {
		matched = matched || errors.Is(err, w)
	}
	if !matched {
		t.Errorf("Open error = %v; want one of %v", err, want)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Open error leaks the plaintext: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	kr := newKeyring(t, "k1", "k1")
	for _, tc := range []struct {
		name           string
		plaintext, aad []byte
	}{
		{"token set", secret, aliceGitHub},
		{"empty plaintext", nil, aliceGitHub},
		{"no aad", secret, nil},
		{"binary", []byte{0, 1, 2, 0xff, 0}, []byte{0}},
		{"largest", bytes.Repeat([]byte{'x'}, vault.MaxPlaintext), aliceGitHub},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sealed := seal(t, kr, tc.plaintext, tc.aad)
			if bytes.Contains(sealed, secret) {
				t.Fatal("sealed blob contains the plaintext")
			}
			got, err := kr.Open(sealed, tc.aad)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tc.plaintext) {
				t.Fatalf("Open = %q; want %q", got, tc.plaintext)
			}
		})
	}
}

func TestSealLayout(t *testing.T) {
	for _, id := range []string{"k", "k1", "2026-01.prod_key", strings.Repeat("z", 32)} {
		t.Run(id, func(t *testing.T) {
			kr := newKeyring(t, id, id)
			sealed := seal(t, kr, secret, aliceGitHub)
			hdr := append([]byte{1, byte(len(id))}, id...)
			if !bytes.HasPrefix(sealed, hdr) {
				t.Fatalf("header = %x; want %x", sealed[:min(len(sealed), len(hdr))], hdr)
			}
			if want := len(hdr) + 12 + len(secret) + 16; len(sealed) != want {
				t.Fatalf("len = %d; want %d (header, nonce, ciphertext, tag)", len(sealed), want)
			}
		})
	}
}

func TestSealTooLarge(t *testing.T) {
	kr := newKeyring(t, "k1", "k1")
	sealed, err := kr.Seal(make([]byte, vault.MaxPlaintext+1), nil)
	if err == nil || sealed != nil {
		t.Fatalf("Seal of %d bytes = %d bytes, %v; want an error", vault.MaxPlaintext+1, len(sealed), err)
	}
}

func TestOpenWrongAAD(t *testing.T) {
	kr := newKeyring(t, "k1", "k1")
	sealed := seal(t, kr, secret, aliceGitHub)
	for _, tc := range []struct {
		name string
		aad  []byte
	}{
		{"another user", []byte("bob\x00github")},
		{"another upstream", []byte("alice\x00linear")},
		{"swapped", []byte("github\x00alice")},
		{"no separator", []byte("alicegithub")},
		{"extended", []byte("alice\x00github\x00")},
		{"prefix", []byte("alice")},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kr.Open(sealed, tc.aad)
			checkOpenFails(t, got, err, vault.ErrCorrupt)
		})
	}
}

func TestOpenTampered(t *testing.T) {
	// ka and kb hold the same key bytes, so only the authenticated
	// header stops a blob's key id being rewritten from one to the other.
	same := testKey("shared")
	kr, err := vault.NewKeyring("ka", map[string][]byte{"ka": same, "kb": same})
	if err != nil {
		t.Fatal(err)
	}
	sealed := seal(t, kr, secret, aliceGitHub)

	for i := range sealed {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			t.Run(fmt.Sprintf("byte %d xor %#x", i, mask), func(t *testing.T) {
				tampered := bytes.Clone(sealed)
				tampered[i] ^= mask
				got, err := kr.Open(tampered, aliceGitHub)
				checkOpenFails(t, got, err, vault.ErrCorrupt, vault.ErrUnknownKey)
			})
		}
	}
	t.Run("key id to a twin", func(t *testing.T) {
		tampered := bytes.Clone(sealed)
		tampered[3] = 'b' // "ka" -> "kb"
		got, err := kr.Open(tampered, aliceGitHub)
		checkOpenFails(t, got, err, vault.ErrCorrupt)
	})
	t.Run("byte appended", func(t *testing.T) {
		got, err := kr.Open(append(bytes.Clone(sealed), 0), aliceGitHub)
		checkOpenFails(t, got, err, vault.ErrCorrupt)
	})
	if got, err := kr.Open(sealed, aliceGitHub); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("the untampered blob no longer opens: %v", err)
	}
}

func TestOpenTruncated(t *testing.T) {
	kr := newKeyring(t, "k1", "k1")
	sealed := seal(t, kr, secret, aliceGitHub)
	for n := range len(sealed) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := kr.Open(sealed[:n], aliceGitHub)
			checkOpenFails(t, got, err, vault.ErrCorrupt)
		})
	}
}

func TestOpenMalformed(t *testing.T) {
	kr := newKeyring(t, "k1", "k1")
	sealed := seal(t, kr, secret, aliceGitHub)
	withVersion := func(v byte) []byte {
		b := bytes.Clone(sealed)
		b[0] = v
		return b
	}
	for _, tc := range []struct {
		name   string
		sealed []byte
	}{
		{"nil", nil},
		{"version 0", withVersion(0)},
		{"version 2", withVersion(2)},
		{"plaintext JSON", secret},
		{"empty key id", append([]byte{1, 0}, make([]byte, 28)...)},
		{"key id too long", append(append([]byte{1, 33}, strings.Repeat("k", 33)...), make([]byte, 28)...)},
		{"key id not printable", append([]byte{1, 2, 'k', 0}, make([]byte, 28)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kr.Open(tc.sealed, aliceGitHub)
			checkOpenFails(t, got, err, vault.ErrCorrupt)
		})
	}
}

func TestOpenUnknownKey(t *testing.T) {
	sealed := seal(t, newKeyring(t, "k1", "k1"), secret, aliceGitHub)
	got, err := newKeyring(t, "k2", "k2").Open(sealed, aliceGitHub)
	checkOpenFails(t, got, err, vault.ErrUnknownKey)
	if !strings.Contains(err.Error(), `"k1"`) {
		t.Errorf("error %q does not name the key id", err)
	}
}

// TestRotation walks the documented procedure, with a Keyring per step as
// a config reload would build them.
func TestRotation(t *testing.T) {
	before := newKeyring(t, "k1", "k1")
	old := seal(t, before, secret, aliceGitHub)
	if before.Stale(old) {
		t.Fatal("a blob under the current key is stale")
	}

	// Step 1: k2 is added but not current; nothing changes yet.
	added := newKeyring(t, "k1", "k1", "k2")
	if added.Stale(old) {
		t.Fatal("adding k2 made a k1 blob stale while k1 is current")
	}

	// Step 2: k2 is current; the old blob opens, is stale and is re-sealed.
	during := newKeyring(t, "k2", "k1", "k2")
	got, err := during.Open(old, aliceGitHub)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open of the k1 blob with k2 current = %q, %v", got, err)
	}
	if !during.Stale(old) {
		t.Fatal("a k1 blob is not stale with k2 current")
	}
	resealed := seal(t, during, got, aliceGitHub)
	if during.Stale(resealed) {
		t.Fatal("the re-sealed blob is stale")
	}

	// Step 3: k1 is removed; the re-sealed blob opens, the old one does not.
	after := newKeyring(t, "k2", "k2")
	if got, err := after.Open(resealed, aliceGitHub); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open of the re-sealed blob after removing k1 = %q, %v", got, err)
	}
	got, err = after.Open(old, aliceGitHub)
	checkOpenFails(t, got, err, vault.ErrUnknownKey)
	if !after.Stale(old) {
		t.Error("a blob under a removed key is not stale")
	}
}

func TestStale(t *testing.T) {
	kr := newKeyring(t, "k2", "k1", "k2")
	under := func(id string) []byte { return seal(t, newKeyring(t, id, id), secret, aliceGitHub) }
	for _, tc := range []struct {
		name   string
		sealed []byte
		want   bool
	}{
		{"current key", under("k2"), false},
		{"older key", under("k1"), true},
		{"unknown key", under("k0"), true},
		{"nil", nil, false},
		{"version only", []byte{1}, false},
		{"bad version", append([]byte{9}, under("k1")[1:]...), false},
		{"key id cut short", []byte{1, 2, 'k'}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kr.Stale(tc.sealed); got != tc.want {
				t.Fatalf("Stale = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestNonceUnique(t *testing.T) {
	const n = 20000
	kr := newKeyring(t, "k1", "k1")
	const hdrLen = 2 + len("k1")
	seen := make(map[[12]byte]bool, n)
	for range n {
		sealed := seal(t, kr, secret, aliceGitHub)
		nonce := [12]byte(sealed[hdrLen : hdrLen+12])
		if seen[nonce] {
			t.Fatalf("nonce %x repeated within %d seals", nonce, len(seen))
		}
		seen[nonce] = true
	}
}

func TestConcurrent(t *testing.T) {
	kr := newKeyring(t, "k2", "k1", "k2")
	older := seal(t, newKeyring(t, "k1", "k1"), secret, aliceGitHub)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			aad := fmt.Appendf(nil, "user%d\x00github", g)
			for i := range 200 {
				plaintext := fmt.Appendf(nil, "token %d/%d", g, i)
				sealed, err := kr.Seal(plaintext, aad)
				if err != nil {
					t.Errorf("Seal: %v", err)
					return
				}
				if got, err := kr.Open(sealed, aad); err != nil || !bytes.Equal(got, plaintext) {
					t.Errorf("Open = %q, %v; want %q", got, err, plaintext)
					return
				}
				if got, err := kr.Open(older, aliceGitHub); err != nil || !bytes.Equal(got, secret) || !kr.Stale(older) {
					t.Errorf("Open of the older blob = %q, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestKeysNotRetained checks that clearing the caller's keys, as a careful
// caller does, leaves the Keyring working.
func TestKeysNotRetained(t *testing.T) {
	key := bytes.Clone(testKey("k1"))
	keys := map[string][]byte{"k1": key}
	kr, err := vault.NewKeyring("k1", keys)
	if err != nil {
		t.Fatal(err)
	}
	clear(key)
	delete(keys, "k1")
	sealed := seal(t, kr, secret, aliceGitHub)
	if got, err := newKeyring(t, "k1", "k1").Open(sealed, aliceGitHub); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("a blob sealed after clearing the caller's key does not open under the original: %v", err)
	}
}

func TestNewKeyringErrors(t *testing.T) {
	good := testKey("good")
	for _, tc := range []struct {
		name    string
		current string
		keys    map[string][]byte
		want    string
	}{
		{"no keys", "k1", nil, "no keys"},
		{"current missing", "k3", map[string][]byte{"k1": good, "k2": testKey("k2")}, `current key "k3" is not among the keys (k1, k2)`},
		{"current empty", "", map[string][]byte{"k1": good}, "current key id is invalid"},
		{"short key", "k1", map[string][]byte{"k1": good[:31]}, `key "k1" is 31 bytes, want 32`},
		{"long key", "k1", map[string][]byte{"k1": append(bytes.Clone(good), 0)}, `key "k1" is 33 bytes, want 32`},
		{"nil key", "k1", map[string][]byte{"k1": nil}, `key "k1" is 0 bytes`},
		{"id with a space", "k1", map[string][]byte{"k1": good, "k 2": testKey("k2")}, "a key id is invalid"},
		{"id too long", "k1", map[string][]byte{"k1": good, strings.Repeat("k", 33): testKey("k2")}, "a key id is invalid"},
		{"id not ASCII", "k1", map[string][]byte{"k1": good, "clé": testKey("k2")}, "a key id is invalid"},
		{"key material as id", "k1", map[string][]byte{"k1": good, base64.StdEncoding.EncodeToString(testKey("pasted")): testKey("k2")}, "a key id is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kr, err := vault.NewKeyring(tc.current, tc.keys)
			if err == nil {
				t.Fatalf("NewKeyring = %v; want an error", kr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to contain %q", err, tc.want)
			}
			for id, key := range tc.keys {
				checkNoMaterial(t, err, key)
				if len(id) >= 8 && strings.Contains(err.Error(), id) {
					t.Errorf("error %q echoes the invalid id %q", err, id)
				}
			}
		})
	}
}

// checkNoMaterial fails if err shows key in any form it might be written.
func checkNoMaterial(t *testing.T, err error, key []byte) {
	t.Helper()
	if len(key) < 8 {
		return
	}
	msg := err.Error()
	for _, form := range []string{
		string(key),
		fmt.Sprintf("%x", key),
		fmt.Sprintf("%v", key),
		base64.StdEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key),
	} {
		if strings.Contains(msg, form) {
			t.Errorf("error %q contains key material", msg)
		}
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2 := testKey("k1"), testKey("k2")
	std := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name string
		spec string
		want map[string][]byte // nil when an error is wanted
		err  string
	}{
		{"one", "k1:" + std(k1), map[string][]byte{"k1": k1}, ""},
		{"two", "k2:" + std(k2) + ",k1:" + std(k1), map[string][]byte{"k1": k1, "k2": k2}, ""},
		{"URL base64", "k1:" + base64.URLEncoding.EncodeToString(k1), map[string][]byte{"k1": k1}, ""},
		{"unpadded", "k1:" + base64.RawStdEncoding.EncodeToString(k1), map[string][]byte{"k1": k1}, ""},
		{"unpadded URL", "k1:" + base64.RawURLEncoding.EncodeToString(k1), map[string][]byte{"k1": k1}, ""},
		{"spaces", "  k2 : " + std(k2) + " ,\n k1:" + std(k1) + "\n", map[string][]byte{"k1": k1, "k2": k2}, ""},
		{"every id character", "Az09._-:" + std(k1), map[string][]byte{"Az09._-": k1}, ""},

		{"empty", "", nil, "no keys"},
		{"blank", " \n", nil, "no keys"},
		{"empty entry", "k1:" + std(k1) + ",", nil, "entry 2 is empty"},
		{"no id", std(k1), nil, "entry 1 has no id"},
		{"empty id", ":" + std(k1), nil, "entry 1: invalid id"},
		{"id with a space", "k 1:" + std(k1), nil, "entry 1: invalid id"},
		{"id too long", strings.Repeat("k", 33) + ":" + std(k1), nil, "entry 1: invalid id"},
		{"id not ASCII", "clé:" + std(k1), nil, "entry 1: invalid id"},
		{"key and id swapped", std(k1) + ":k1", nil, "entry 1: invalid id"},
		{"empty key", "k1:", nil, `entry 1 ("k1"): the key is empty`},
		{"bad base64", "k1:" + std(k1)[:20] + "*" + std(k1)[21:], nil, `entry 1 ("k1"): the key is not base64`},
		{"mixed alphabets", "k1:-_" + std(k1)[2:22] + "+/" + std(k1)[24:], nil, "not base64"},
		{"hex, not base64", "k1:" + fmt.Sprintf("%x", k1), nil, `entry 1 ("k1"): the key decodes to 48 bytes, want 32`},
		{"16 bytes", "k1:" + std(k1[:16]), nil, "decodes to 16 bytes, want 32"},
		{"33 bytes", "k1:" + std(append(bytes.Clone(k1), 7)), nil, "decodes to 33 bytes, want 32"},
		{"duplicate id", "k1:" + std(k1) + ",k2:" + std(k2) + ",k1:" + std(k2), nil, `entry 3: id "k1" appears twice`},
		{"second entry bad", "k1:" + std(k1) + ",k2:" + std(k2[:31]), nil, `entry 2 ("k2"): the key decodes to 31 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := vault.ParseKeys(tc.spec)
			if tc.want != nil {
				if err != nil {
					t.Fatalf("ParseKeys: %v", err)
				}
				if !maps.EqualFunc(got, tc.want, bytes.Equal) {
					t.Fatalf("ParseKeys = %x; want %x", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseKeys = %x; want an error containing %q", got, tc.err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %q; want it to contain %q", err, tc.err)
			}
			for _, key := range [][]byte{k1, k2} {
				checkNoMaterial(t, err, key)
			}
			// No piece of the spec that could be key material, however
			// mangled, is echoed; only ids (all short here) may be.
			for piece := range strings.FieldsFuncSeq(tc.spec, func(r rune) bool { return r == ',' || r == ':' }) {
				if piece = strings.TrimSpace(piece); len(piece) >= 8 && strings.Contains(err.Error(), piece) {
					t.Errorf("error %q echoes %q from the spec", err, piece)
				}
			}
		})
	}
}

// TestParseKeysIntoKeyring is the config path: parse, then build.
func TestParseKeysIntoKeyring(t *testing.T) {
	spec := "k2:" + base64.StdEncoding.EncodeToString(testKey("k2")) + ",k1:" + base64.URLEncoding.EncodeToString(testKey("k1"))
	keys, err := vault.ParseKeys(spec)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := vault.NewKeyring("k2", keys)
	if err != nil {
		t.Fatal(err)
	}
	old := seal(t, newKeyring(t, "k1", "k1"), secret, aliceGitHub)
	if got, err := kr.Open(old, aliceGitHub); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

func TestKeyringFormat(t *testing.T) {
	kr := newKeyring(t, "k2", "k2", "k1")
	want := "vault.Keyring{current: k2, keys: k1, k2}"
	if got := kr.String(); got != want {
		t.Fatalf("String = %q; want %q", got, want)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		t.Run(verb, func(t *testing.T) {
			if got := fmt.Sprintf(verb, kr); got != want {
				t.Fatalf("Sprintf(%s) = %q; want %q", verb, got, want)
			}
			if got := fmt.Sprintf(verb, *kr); got != want {
				t.Fatalf("Sprintf(%s) of the struct = %q; want %q", verb, got, want)
			}
		})
	}
}

// FuzzOpen checks that Open never panics, that arbitrary bytes open only
// if they are a blob the test sealed, and that no change to a freshly
// sealed blob (bytes flipped, cut, or added) ever opens.
func FuzzOpen(f *testing.F) {
	kr := newKeyring(f, "k2", "k1", "k2")
	valid := seal(f, kr, secret, aliceGitHub)
	older := seal(f, newKeyring(f, "k1", "k1"), secret, aliceGitHub)
	f.Add(valid, []byte{}, uint16(len(valid)), []byte{})
	f.Add(older, []byte{0, 0, 0, 1}, uint16(len(valid)), []byte{})
	f.Add([]byte{}, []byte{0x80}, uint16(3), []byte{})
	f.Add([]byte{1, 2, 'k', '2'}, []byte{}, uint16(len(valid)-1), []byte{})
	f.Add([]byte{2}, []byte{}, uint16(len(valid)), []byte{0})
	f.Add(secret, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, uint16(len(valid)), []byte("x"))
	f.Fuzz(func(t *testing.T, raw, xor []byte, cut uint16, tail []byte) {
		// Arbitrary bytes: every blob the test seals holds secret, so
		// anything else opening would be a forgery.
		kr.Stale(raw)
		if got, err := kr.Open(raw, aliceGitHub); err == nil && !bytes.Equal(got, secret) {
			t.Fatalf("Open of arbitrary bytes succeeded with %q", got)
		} else if err != nil && !errors.Is(err, vault.ErrCorrupt) && !errors.Is(err, vault.ErrUnknownKey) {
			t.Fatalf("Open error %v is neither ErrCorrupt nor ErrUnknownKey", err)
		}

		// A fresh blob, changed.
		sealed := seal(t, kr, secret, aliceGitHub)
		mutated := bytes.Clone(sealed)
		for i, b := range xor {
			mutated[i%len(mutated)] ^= b
		}
		if int(cut) < len(mutated) {
			mutated = mutated[:cut]
		}
		mutated = append(mutated, tail...)
		if bytes.Equal(mutated, sealed) {
			return
		}
		kr.Stale(mutated)
		got, err := kr.Open(mutated, aliceGitHub)
		if err == nil {
			t.Fatalf("Open of a changed blob succeeded with %q", got)
		}
		if !errors.Is(err, vault.ErrCorrupt) && !errors.Is(err, vault.ErrUnknownKey) {
			t.Fatalf("Open error %v is neither ErrCorrupt nor ErrUnknownKey", err)
		}
	})
}

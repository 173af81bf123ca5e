package browser

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// What a sealed value is for. It is authenticated with the value, so a
// login-state cookie can never be replayed as a session or the reverse.
const (
	purposeSession = "session"
	purposeLogin   = "login"
)

// maxCookieValue bounds what open will decode: a browser sends at most
// about 4 KiB per cookie, and anything longer is not ours.
const maxCookieValue = 4096

// errUnsealed is any cookie that does not open: forged, tampered, truncated,
// sealed under another key or for another purpose. Which one is not said,
// since that would only help a forger.
var errUnsealed = errors.New("browser: cookie does not open")

// sealer seals small JSON values into cookie-safe strings with vault's
// AES-256-GCM Sealer: unpadded base64url of nonce | ciphertext | tag.
type sealer struct {
	aead *vault.Sealer
}

func newSealer(key []byte) (*sealer, error) {
	// A random 96-bit nonce per seal: the number of cookies sealed under
	// one key stays far below the 2^32 that random GCM nonces allow.
	aead, err := vault.NewSealer(key)
	if err != nil {
		return nil, fmt.Errorf("browser: cookie cipher: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func additionalData(purpose string) []byte {
	return []byte("switchboard auth/browser v1 " + purpose)
}

// seal returns v as JSON, encrypted and authenticated for purpose, in
// unpadded base64url.
func (s *sealer) seal(purpose string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("browser: sealing %s: %w", purpose, err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nil, plain, additionalData(purpose))), nil
}

// open reverses seal into v; any failure is errUnsealed.
func (s *sealer) open(purpose, value string, v any) error {
	if value == "" || len(value) > maxCookieValue {
		return errUnsealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return errUnsealed
	}
	plain, err := s.aead.Open(raw, additionalData(purpose))
	if err != nil {
		return errUnsealed
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return errUnsealed
	}
	return nil
}

// session is the sealed content of the session cookie.
type session struct {
	// ID is random per sign-in; the CSRF token is derived from it, so a new
	// sign-in invalidates the old forms.
	ID    string `json:"id"`
	Iss   string `json:"iss"`
	Sub   string `json:"sub"`
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	// Exp is when the session ends, in Unix seconds.
	Exp int64 `json:"exp"`
}

// loginState is the sealed content of the login-state cookie.
type loginState struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	ReturnTo string `json:"returnTo"`
	// Exp is when the state stops being accepted, in Unix seconds.
	Exp int64 `json:"exp"`
}

// maxSpent bounds the spent-state memory. Past it, states are no longer
// remembered: the identity provider's single-use codes still stop a replay,
// this set only refuses one earlier and more clearly.
const maxSpent = 1 << 16

// spentStates remembers the states this replica's callback has accepted,
// until they expire, so a login-state cookie replayed by hand (the browser
// itself deletes it) is refused with a clear 400.
type spentStates struct {
	mu     sync.Mutex
	until  map[string]time.Time
	pruned time.Time
}

// spend records state as used until exp and reports whether it was unused.
func (sp *spentStates) spend(state string, now, exp time.Time) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.until == nil {
		sp.until = map[string]time.Time{}
	}
	// Pruning walks the whole map: at most once a minute, so a flood of
	// callbacks cannot make every one of them pay for it.
	if now.Sub(sp.pruned) >= time.Minute {
		for k, t := range sp.until {
			if !now.Before(t) {
				delete(sp.until, k)
			}
		}
		sp.pruned = now
	}
	if t, used := sp.until[state]; used && now.Before(t) {
		return false
	}
	if len(sp.until) < maxSpent {
		sp.until[state] = exp
	}
	return true
}

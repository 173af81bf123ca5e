package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Where an ID-JAG source keeps the access tokens it obtains, beyond its own memory: a store every replica reads,
// each token sealed with the keys that seal user-oauth grants. A person who reached the upstream through one
// replica reaches it through the others with the same token, and no second exchange.
//
// Tokens are kept per person (issuer and subject) and upstream, not per assertion: the IdP's grant is a decision
// about the person, not about one of their tokens, so a person's new ID token (or a second client of theirs) uses
// the token already obtained instead of exchanging again. What still bounds it: each token is kept only until
// shortly before it expires, and never beyond the assertion that obtained it; the gateway serves only a caller whose
// own token it verified just now, as the same person; and a token is bound (in the seal) to the upstream's whole
// configuration, so a token obtained for one IdP, authorization server, resource, client or scopes never reaches
// another, even under the same upstream name after a reload.

// TokenStore keeps sealed tokens by principal and upstream, each for a ttl: routing/state's Memory and Redis are
// ones. A GetToken error (none stored, or the store unreachable) is a miss, and a PutToken error is ignored: the
// source exchanges again, so a store that fails costs exchanges, never a request.
type TokenStore interface {
	GetToken(ctx context.Context, principal, upstream string) ([]byte, error)
	PutToken(ctx context.Context, principal, upstream string, sealed []byte, ttl time.Duration) error
	DeleteToken(ctx context.Context, principal, upstream string) error
}

// Sealer encrypts what is kept in a TokenStore, bound to aad: auth/vault's Keyring is one.
type Sealer interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

// SharedTokens is where an ID-JAG source keeps the tokens it obtains, so that replicas share them.
type SharedTokens struct {
	Store  TokenStore
	Sealer Sealer
}

// sharedTimeout bounds one store operation: a slow store is a miss, and the source exchanges.
const sharedTimeout = 2 * time.Second

// sharedToken is a token as sealed in the store.
type sharedToken struct {
	Header  string `json:"h"`
	Expires int64  `json:"e"` // Unix milliseconds
}

// sharedIn is a source's place in the store: its upstream, and the binding of its configuration.
type sharedIn struct {
	*SharedTokens
	upstream string
	binding  string
}

// idJAGBinding is what a sealed token is bound to besides its person and upstream: every setting that decides who
// issued it and for what. A changed setting makes the tokens kept under the old ones fail to open.
func idJAGBinding(cfg IDJAGConfig) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{
		cfg.IdPTokenURL, cfg.IdPClientID, cfg.SubjectTokenType, cfg.Audience, cfg.Resource, cfg.TokenURL,
		cfg.ClientID, strings.Join(cfg.Scopes, " "),
	}, "\x00")))
	return hex.EncodeToString(sum[:])
}

// aad binds a sealed token to its person, upstream and configuration, and apart from user-oauth grants
// (principal NUL upstream: a principal never is "id-jag", having an issuer and a "|").
func (s *sharedIn) aad(person string) []byte {
	return []byte("id-jag\x00" + person + "\x00" + s.upstream + "\x00" + s.binding)
}

// get returns person's token from the store, if there is one that opens and has not expired by now.
func (s *sharedIn) get(ctx context.Context, person string, now time.Time) (exchanged, bool) {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	sealed, err := s.Store.GetToken(ctx, person, s.upstream)
	if err != nil {
		return exchanged{}, false
	}
	plain, err := s.Sealer.Open(sealed, s.aad(person))
	if err != nil {
		return exchanged{}, false
	}
	defer clear(plain)
	var t sharedToken
	if json.Unmarshal(plain, &t) != nil || t.Header == "" {
		return exchanged{}, false
	}
	e := exchanged{header: t.Header, expires: time.UnixMilli(t.Expires)}
	return e, now.Before(e.expires)
}

// put seals e into the store for person, until it expires. The caller's cancellation does not stop it: the
// token was obtained, and the next replica may as well have it.
func (s *sharedIn) put(ctx context.Context, person string, e exchanged, now time.Time) {
	ttl := e.expires.Sub(now)
	if ttl <= 0 {
		return
	}
	plain, err := json.Marshal(sharedToken{Header: e.header, Expires: e.expires.UnixMilli()})
	if err != nil {
		return
	}
	defer clear(plain)
	sealed, err := s.Sealer.Seal(plain, s.aad(person))
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	_ = s.Store.PutToken(ctx, person, s.upstream, sealed, ttl)
}

// drop deletes person's token from the store if it is still header, the one the upstream refused: one another
// replica put there since is left.
func (s *sharedIn) drop(ctx context.Context, person, header string, now time.Time) bool {
	e, ok := s.get(ctx, person, now)
	if !ok || e.header != header {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	_ = s.Store.DeleteToken(ctx, person, s.upstream)
	return true
}

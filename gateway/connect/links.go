package connect

import (
	"github.com/switchboard-mcp/switchboard/auth"

	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
)

// MaxLinkTTL bounds how long a connect link lives. Issue 17 has the link's
// state "single-use, short-lived": ten minutes is enough to read the
// message, open the link and sign in, and the flow that follows has its
// own ten minutes (upstreamauth.DefaultMaxAge).
const MaxLinkTTL = 10 * time.Minute

// linkIDBytes is the link id's randomness: 256 bits, so that guessing a live
// link is hopeless however many are in flight.
const linkIDBytes = 32

// linkIDLen is the length of a link id: linkIDBytes in unpadded base64url.
var linkIDLen = base64.RawURLEncoding.EncodedLen(linkIDBytes)

// Links mints connect links. It is safe for concurrent use.
type Links struct {
	store Store
	base  string // <publicURL>/connect/
	ttl   time.Duration
	// limit, when set, bounds the links one principal may mint (SetLimit).
	limit func(ctx context.Context, principal string) error
}

// ErrTooManyLinks is what a principal gets who asked for more links than the limit allows.
var ErrTooManyLinks = errors.New("connect: too many connect links asked for; wait a minute and try again")

// SetLimit bounds the links one principal may mint: before each, allow is asked with the principal's key, and
// a link is refused with ErrTooManyLinks when it says no. Every link is a record in the shared store, which holds
// at most state.MaxConnects of them for everyone; without a bound one person could use them all up. An error
// of allow refuses the link too. Call it before the Links are used.
func (l *Links) SetLimit(allow func(ctx context.Context, principal string) (bool, error)) {
	l.limit = func(ctx context.Context, principal string) error {
		ok, err := allow(ctx, principal)
		switch {
		case err != nil:
			return fmt.Errorf("connect: the link limit cannot be checked: %w", err)
		case !ok:
			return ErrTooManyLinks
		}
		return nil
	}
}

// NewLinks returns Links that keep their records in store and point at the
// gateway's publicURL (https, or http on a loopback host for development).
// ttl is each link's life: 0 means MaxLinkTTL, more is refused.
func NewLinks(store Store, publicURL string, ttl time.Duration) (*Links, error) {
	if store == nil {
		return nil, errors.New("connect: links: no store")
	}
	u, err := url.Parse(publicURL)
	if err != nil {
		return nil, fmt.Errorf("connect: links: public URL: %w", err)
	}
	if err := auth.CheckSecureURL("public URL", publicURL); err != nil {
		return nil, fmt.Errorf("connect: links: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("connect: links: public URL %q must have no query, fragment or user", publicURL)
	}
	switch {
	case ttl < 0 || ttl > MaxLinkTTL:
		return nil, fmt.Errorf("connect: links: ttl %v (0 to %v)", ttl, MaxLinkTTL)
	case ttl == 0:
		ttl = MaxLinkTTL
	}
	return &Links{store: store, base: strings.TrimRight(publicURL, "/") + Prefix, ttl: ttl}, nil
}

// New mints a link for principal (the issuer "|" subject key the browser
// must sign in as) to connect upstream, and returns its URL,
// <publicURL>/connect/<id>. session and elicitationID say whom to notify
// when the connection completes ("" for none: a client without URL
// elicitation retries on its own). The link works once, for the links'
// ttl. The returned URL is a bearer of the link: the caller hands it to the
// client and does not log it.
func (l *Links) New(ctx context.Context, principal, upstream, session, elicitationID string) (string, error) {
	id, err := l.mint(ctx, principal, upstream, session, elicitationID)
	if err != nil {
		return "", err
	}
	return l.base + id, nil
}

// mint stores a new link's record and returns its id, as New does.
func (l *Links) mint(ctx context.Context, principal, upstream, session, elicitationID string) (string, error) {
	if err := checkNames(principal, upstream); err != nil {
		return "", err
	}
	if l.limit != nil {
		if err := l.limit(ctx, principal); err != nil {
			return "", err
		}
	}
	id := newLinkID()
	rec := state.ConnectRecord{Principal: principal, Upstream: upstream, Session: session, ElicitationID: elicitationID}
	if err := l.store.PutConnect(ctx, id, rec, l.ttl); err != nil {
		// The store's error names the id: a live link must not reach a log.
		return "", fmt.Errorf("connect: storing a link for %s: %w", upstream, redacted(err, id))
	}
	return id, nil
}

// newLinkID is 256 random bits in unpadded base64url: URL-safe as it is.
func newLinkID() string {
	b := make([]byte, linkIDBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// validLinkID reports whether id looks like one newLinkID made, so that any
// other path segment (a state key among them) never reaches the store.
func validLinkID(id string) bool {
	if len(id) != linkIDLen {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

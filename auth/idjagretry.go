package auth

import (
	"context"
	"net/http"
)

// An access token obtained through an ID-JAG is kept until shortly before it expires, by every replica. If the
// upstream refuses it before then (its authorization server revoked it, or rotated its keys), waiting out its
// lifetime would leave the person locked out: RetryOn401 forgets it instead, here and in the shared store, and
// sends the request again, once, with the token a new exchange gives.

// forgetter is a source that can forget a token it gave p: TokenExchangeSource, and a multiSource holding one.
type forgetter interface {
	forget(ctx context.Context, p *Principal, header string) bool
}

var (
	_ forgetter = (*TokenExchangeSource)(nil)
	_ forgetter = multiSource(nil)
)

// forget drops p's cached token if it is header (the Authorization an upstream refused), from this source's
// memory and from the shared store, and reports whether it held it in either. Another token cached since is kept.
func (s *TokenExchangeSource) forget(ctx context.Context, p *Principal, header string) bool {
	if p == nil || p.token == "" || header == "" {
		return false
	}
	person, key := s.keyOf(p)
	s.mu.Lock()
	e, ok := s.cache[key]
	forgot := ok && e.header == header
	if forgot {
		delete(s.cache, key)
	}
	s.mu.Unlock()
	if s.shared != nil && person != "" && s.shared.drop(ctx, person, header, s.now()) {
		forgot = true
	}
	return forgot
}

func (m multiSource) forget(ctx context.Context, p *Principal, header string) bool {
	forgot := false
	for _, s := range m {
		if f, ok := s.(forgetter); ok && f.forget(ctx, p, header) {
			forgot = true
		}
	}
	return forgot
}

// RetryOn401 is the HTTP transport of an upstream whose credentials are exchanged per person (ID-JAG): on a 401 to
// a person's token that Source gave, it forgets that token and sends the request once more, with Source's headers
// anew. Other answers, requests without a person, and tokens Source did not give (the gateway's own) go back as
// they are.
type RetryOn401 struct {
	// Base sends the requests.
	Base http.RoundTripper
	// Source is the upstream's credential source (NewCredentialSource), which set the request's headers.
	Source CredentialSource
	// Principal gives the person a request was made for, as the headers were made for them; nil for none.
	Principal func(ctx context.Context) *Principal
}

var _ http.RoundTripper = (*RetryOn401)(nil)

// RoundTrip implements http.RoundTripper.
func (t *RetryOn401) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	f, ok := t.Source.(forgetter)
	if !ok || !Replayable(r) {
		return resp, nil
	}
	ctx := r.Context()
	p := t.Principal(ctx)
	if p == nil || !f.forget(ctx, p, r.Header.Get("Authorization")) {
		return resp, nil
	}
	h, err := t.Source.Header(ctx, p)
	if err != nil {
		return resp, nil // the 401 goes back; the person's next request exchanges again, and says why it fails
	}
	return Resend(t.Base, r, resp, h)
}

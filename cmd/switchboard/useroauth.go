package main

import (
	"cmp"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/auth/browser"
	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/gateway/connect"
	"github.com/switchboard-mcp/switchboard/gateway/connections"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// userOAuth wires per-user upstream OAuth (issue 17, design §8) into one gateway process: the sealed grants in the
// state store (Redis shared by the replicas, else memory), each upstream's authorization server and client
// (gateway/connect's Discovery), the tokens, the links, the browser sign-in, and the pages. It implements what
// routing (Connector), gateway (GrantRevoker) and the pages (connections.Grants, connect.Notifier) ask of it.
type userOAuth struct {
	log       *slog.Logger
	publicURL string
	names     []string // the user-oauth upstreams, in config order
	store     userOAuthStore
	discovery *connect.Discovery
	tokens    *connect.Tokens
	links     *connect.Links
	// signIn is the browser sign-in; its admins see the status view on /connections.
	signIn *browserSignIn
	sealer *vault.Keyring
	// dpop is the gateway's DPoP key (RFC 9449), the same on every replica: tokens of an authorization server
	// that offers DPoP are bound to it, and every request with one carries a proof of it.
	dpop *auth.DPoPKey
	// router is set once it exists: the connect handler's notifications go to it.
	router atomic.Pointer[routing.Router]
}

// userOAuthStore is what per-user OAuth keeps in the state store.
type userOAuthStore interface {
	state.GrantStore
	state.RegistrationStore
	gateway.Limiter
}

var (
	_ userOAuthStore       = (*state.Memory)(nil)
	_ userOAuthStore       = (*state.Redis)(nil)
	_ routing.Connector    = (*userOAuth)(nil)
	_ gateway.GrantRevoker = (*userOAuth)(nil)
	_ connections.Grants   = (*userOAuth)(nil)
	_ connect.Notifier     = (*userOAuth)(nil)
	_ connections.Status   = (*routerStatus)(nil)
)

const (
	// cachedListsTTL is how long an upstream's cached lists live without a connected person's session renewing
	// them.
	cachedListsTTL = 30 * 24 * time.Hour
	// linkTTL is how long a connect link works.
	linkTTL = 10 * time.Minute
	// signInPrefix is where the browser sign-in's callback and sign-out live.
	signInPrefix = "/auth/"
	// linkRate and linkBurst bound the connect links one person may mint, on every replica together: each is a
	// record in the shared store, which holds a bounded number for everyone.
	linkRate  = 1.0 / 30 // per second
	linkBurst = 10
)

// hasUserOAuth reports whether any enabled upstream is user-oauth.
func hasUserOAuth(cfg *config.Config) bool {
	return slices.ContainsFunc(cfg.Upstreams, isUserOAuth)
}

func isUserOAuth(u config.Upstream) bool {
	return !u.Disabled && u.Auth != nil && u.Auth.UserOAuth != nil
}

// newUserOAuth sets per-user upstream OAuth up, or returns nil when no upstream uses it. redis is the shared
// store, nil for memory; idp reaches the issuer (nil: a default client). It signs in at the issuer's discovery
// now: without it no one can connect, so a gateway that cannot reach its identity provider does not start.
// onClose registers what the caller releases.
func newUserOAuth(ctx context.Context, cfg *config.Config, redis *state.Redis, log *slog.Logger, onClose func(func()), idp *http.Client) (*userOAuth, error) {
	if !hasUserOAuth(cfg) {
		return nil, nil
	}
	a := cfg.Auth
	if a == nil || a.Browser == nil || a.TokenKeys == "" || cfg.PublicURL == "" {
		return nil, errors.New("user-oauth upstreams need auth (with browser and tokenKeys) and publicURL; switchboard check explains")
	}
	keys, err := vault.ParseKeys(a.TokenKeys)
	if err != nil {
		return nil, fmt.Errorf("auth.tokenKeys: %w", err)
	}
	current := strings.TrimSpace(strings.Split(a.TokenKeys, ":")[0])
	keyring, err := vault.NewKeyring(current, keys)
	if err != nil {
		return nil, fmt.Errorf("auth.tokenKeys: %w", err)
	}
	defer clear(keys)
	u := &userOAuth{log: log, publicURL: strings.TrimSuffix(cfg.PublicURL, "/"), sealer: keyring}
	// One DPoP key for every replica and restart, derived from the current sealing key they all hold: a token
	// bound to it works wherever the shared grant is used.
	if u.dpop, err = auth.DPoPKeyFrom(keys[current]); err != nil {
		return nil, err
	}
	if redis != nil {
		u.store = redis
	} else {
		mem := state.NewMemory()
		onClose(mem.Shutdown)
		u.store = mem
	}
	var ups []connect.UpstreamOAuth
	for _, up := range cfg.Upstreams {
		if !isUserOAuth(up) {
			continue
		}
		uo := up.Auth.UserOAuth
		c := connect.UpstreamOAuth{Name: up.Name, URL: up.URL, Scopes: uo.Scopes, OmitResource: uo.OmitResource}
		if uo.ClientID != "" {
			c.Client = &upstreamauth.Client{ID: uo.ClientID, Secret: uo.ClientSecret}
		}
		ups = append(ups, c)
		u.names = append(u.names, up.Name)
	}
	httpClient := &http.Client{Timeout: 30 * time.Second}
	if u.discovery, err = connect.NewDiscovery(connect.DiscoveryConfig{
		Upstreams: ups, PublicURL: u.publicURL, ClientName: "Switchboard", Store: u.store, Sealer: keyring,
		HTTPClient: httpClient, Logger: log, DPoP: u.dpop,
	}); err != nil {
		return nil, err
	}
	if u.tokens, err = connect.NewTokens(connect.TokensConfig{Store: u.store, Flows: u.discovery, Sealer: keyring, Logger: log}); err != nil {
		return nil, err
	}
	if u.links, err = connect.NewLinks(u.store, u.publicURL, linkTTL); err != nil {
		return nil, err
	}
	u.links.SetLimit(func(ctx context.Context, principal string) (bool, error) {
		ok, _, err := u.store.Allow(ctx, "connect-links:"+principal, linkRate, linkBurst)
		return ok, err
	})
	if u.signIn, err = newBrowserSignIn(ctx, cfg, keys[current], log, idp); err != nil {
		return nil, err
	}
	return u, nil
}

// browserSignIn is the gateway's browser sign-in (auth.browser) with its admins (auth.browser.admins' subjects).
type browserSignIn struct {
	*browser.SignIn
	admins []string
}

// newBrowserSignIn starts the browser sign-in at the issuer. Its cookie's key comes from sealKey, the current
// sealing key of auth.tokenKeys, so replicas that share the keys share sign-ins, and a key rotation signs people
// out once.
func newBrowserSignIn(ctx context.Context, cfg *config.Config, sealKey []byte, log *slog.Logger, idp *http.Client) (*browserSignIn, error) {
	a, publicURL := cfg.Auth, strings.TrimSuffix(cfg.PublicURL, "/")
	cookieKey, err := hkdf.Key(sha256.New, sealKey, nil, "switchboard browser sign-in cookie v1", 32)
	if err != nil {
		return nil, err
	}
	s, err := browser.New(ctx, browser.Config{
		Issuer: a.Issuer, ClientID: a.Browser.ClientID, ClientSecret: a.Browser.ClientSecret,
		RedirectURL: publicURL + signInPrefix + "callback", CookieKey: cookieKey, Secure: strings.HasPrefix(publicURL, "https://"), Logger: log,
	}, idp)
	if err != nil {
		return nil, fmt.Errorf("auth.browser: %w", err)
	}
	b := &browserSignIn{SignIn: s}
	if m := a.Browser.Admins; m != nil {
		b.admins = m.Sub
	}
	return b, nil
}

// isAdmin reports whether r is signed in as a subject auth.browser.admins names, and who.
func (b *browserSignIn) isAdmin(r *http.Request) (browser.User, bool) {
	usr, ok := browser.UserFrom(r.Context())
	return usr, ok && slices.ContainsFunc(b.admins, func(pat string) bool { ok, _ := path.Match(pat, usr.Subject); return ok })
}

// routes mounts the sign-in's callback and sign-out on mux, and returns their paths.
func (b *browserSignIn) routes(mux chi.Router) []string {
	mux.Method(http.MethodGet, signInPrefix+"callback", b.Callback())
	mux.Handle(signInPrefix+"signout", b.SignOut())
	return []string{signInPrefix + "*"}
}

// headers makes a user-oauth upstream's requests carry the principal's own token (refreshed before it expires; a
// 401 is httpClient's). configured is the upstream's static headers (nil for none). Without a principal (the
// catalog's template session) they all go: a static Authorization header is the service credential the catalog
// lists with (docs/auth.md, "The service credential"). A principal's request carries the other configured headers
// and their own token, never the service credential: a token that cannot be had fails the request.
func (u *userOAuth) headers(name string, configured auth.CredentialSource) func(context.Context, http.Header) error {
	return func(ctx context.Context, h http.Header) error {
		_ = injectTraceContext(ctx, h)
		p := auth.PrincipalFrom(ctx)
		if configured != nil {
			creds, err := configured.Header(ctx, p)
			if err != nil {
				return err
			}
			for k, v := range creds {
				if p != nil && strings.EqualFold(k, "Authorization") {
					continue
				}
				h[k] = v
			}
		}
		if p == nil {
			return nil
		}
		tok, err := u.tokens.Token(ctx, p.Key(), name)
		if err != nil {
			return err
		}
		h.Set("Authorization", tok.Type()+" "+tok.AccessToken) // "DPoP" for a DPoP-bound token (RFC 9449 §7.1)
		return nil
	}
}

// httpClient is a user-oauth upstream's HTTP client: the upstream transport's usual pooling, and one refresh and
// retry on 401 (connect.RetryOn401), and a DPoP proof with a DPoP-bound token (auth.DPoPTransport).
func (u *userOAuth) httpClient(name string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 1024
	return &http.Client{Transport: &connect.RetryOn401{
		Base: &auth.DPoPTransport{Base: tr, Key: u.dpop}, Tokens: u.tokens, Upstream: name, Logger: u.log, Moves: u.discovery,
		Principal: func(ctx context.Context) string { return auth.PrincipalFrom(ctx).Key() },
	}}
}

// Connected reports whether principal holds a usable grant for upstream (routing.Connector).
func (u *userOAuth) Connected(ctx context.Context, principal, upstream string) (bool, error) {
	return u.tokens.Connected(ctx, principal, upstream)
}

// Link mints a connect link (routing.Connector).
func (u *userOAuth) Link(ctx context.Context, principal, upstream, session, elicitationID string) (string, error) {
	return u.links.New(ctx, principal, upstream, session, elicitationID)
}

// SaveLists caches an upstream's lists (routing.Connector).
func (u *userOAuth) SaveLists(ctx context.Context, upstream string, lists []byte) error {
	return u.store.PutUpstreamList(ctx, upstream, lists, cachedListsTTL)
}

// LoadLists returns an upstream's cached lists, nil when none (routing.Connector).
func (u *userOAuth) LoadLists(ctx context.Context, upstream string) ([]byte, error) {
	b, err := u.store.GetUpstreamList(ctx, upstream)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// Completed tells the router a connection completed (connect.Notifier).
func (u *userOAuth) Completed(ctx context.Context, rec state.ConnectRecord) {
	if r := u.router.Load(); r != nil {
		r.GrantConnected(ctx, rec.Principal, rec.Upstream, rec.Session, rec.ElicitationID)
	}
}

// Revoke revokes one person's grant (gateway.GrantRevoker).
func (u *userOAuth) Revoke(ctx context.Context, principal, upstream string) error {
	return u.tokens.Disconnect(ctx, principal, upstream)
}

// RevokeUpstream revokes every grant of an upstream (gateway.GrantRevoker).
func (u *userOAuth) RevokeUpstream(ctx context.Context, upstream string) (int, error) {
	return u.tokens.RevokeUpstream(ctx, upstream)
}

// Known reports whether upstream is user-oauth (gateway.GrantRevoker).
func (u *userOAuth) Known(upstream string) bool { return slices.Contains(u.names, upstream) }

// Connections lists the user-oauth upstreams as user sees them (connections.Grants).
func (u *userOAuth) Connections(ctx context.Context, user string) ([]connections.Connection, error) {
	out := make([]connections.Connection, 0, len(u.names))
	for _, name := range u.names {
		c := connections.Connection{Upstream: name, ConnectURL: connect.StartURL(u.publicURL, name)}
		st, err := u.tokens.Status(ctx, user, name)
		switch {
		case err == nil:
			c.Connected, c.Scopes, c.Expires = true, st.Scopes, st.Expiry
		case errors.Is(err, connect.ErrNotConnected):
			c.Scopes = u.discovery.Scopes(name)
		default:
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Disconnect revokes and forgets user's grant (connections.Grants).
func (u *userOAuth) Disconnect(ctx context.Context, user, upstream string) error {
	return u.tokens.Disconnect(ctx, user, upstream)
}

// pages serves the browser sign-in, the connect links and /connections, with the paths to mount them at.
func (u *userOAuth) pages(r *routing.Router) (http.Handler, []string, error) {
	u.router.Store(r)
	h, err := connect.NewHandler(connect.HandlerConfig{
		Store: u.store, Flows: u.discovery, Sealer: u.sealer, Notifier: u, Links: u.links,
		ClientIDURL: connect.MetadataDocumentURL(u.publicURL), RedirectURL: connect.CallbackURL(u.publicURL),
		ClientName: "Switchboard", Logger: u.log,
	})
	if err != nil {
		return nil, nil, err
	}
	page, err := connections.New(connections.Options{
		Grants: u, Status: &routerStatus{r}, CSRF: csrf{u.signIn},
		User: func(r *http.Request) (string, string, bool) {
			usr, ok := browser.UserFrom(r.Context())
			if !ok {
				return "", "", false
			}
			display := cmp.Or(usr.Name, usr.Email, usr.Subject)
			return usr.Key(), display, true
		},
		IsAdmin: func(r *http.Request) bool {
			_, ok := u.signIn.isAdmin(r)
			return ok
		},
		Logger: u.log,
	})
	if err != nil {
		return nil, nil, err
	}
	mux := chi.NewRouter()
	paths := u.signIn.routes(mux)
	mux.Method(http.MethodGet, connect.MetadataDocumentPath, h) // fetched by authorization servers: no sign-in
	mux.Handle(connect.Prefix+"*", u.signIn.Require(h))
	mux.Handle("/connections", u.signIn.Require(page))
	mux.Handle("/connections/*", u.signIn.Require(page))
	return mux, append(paths, connect.Prefix+"*", "/connections", "/connections/*"), nil
}

// csrf adapts the browser sign-in to the connections page and the console.
type csrf struct{ s *browserSignIn }

// Token is the sign-in session's anti-forgery token.
func (c csrf) Token(r *http.Request) string { return c.s.CSRFToken(r) }

// Check reports whether a form carries the session's token and comes from the gateway's own page.
func (c csrf) Check(r *http.Request) bool { return c.s.CheckCSRF(r) }

// routerStatus feeds the admin's status view on /connections.
type routerStatus struct{ r *routing.Router }

// Upstreams lists every upstream's health.
func (s *routerStatus) Upstreams(context.Context) []connections.UpstreamHealth {
	var out []connections.UpstreamHealth
	for _, st := range s.r.Status() {
		out = append(out, connections.UpstreamHealth{Name: st.Name, State: st.State, Tools: st.Tools, Error: st.Error})
	}
	return out
}

// CatalogCount is the number of tools the upstreams give the catalog.
func (s *routerStatus) CatalogCount(context.Context) int {
	n := 0
	for _, st := range s.r.Status() {
		n += st.Tools
	}
	return n
}

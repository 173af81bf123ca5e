// Package browser signs a person's browser in to the gateway through the
// gateway's own identity provider, so that the pages the gateway serves
// (/connect/..., /connections) know who is at the keyboard and can refuse a
// link that was meant for someone else.
//
// SignIn is an OpenID Connect relying party: the authorization-code flow
// with PKCE S256 (golang.org/x/oauth2) and ID-token verification (go-oidc).
//
//   - Require wraps a page: with a valid session cookie it puts the User in
//     the request's context (UserFrom); otherwise it starts the flow.
//   - Callback serves the RedirectURL's path: it checks the login state,
//     exchanges the code, verifies the ID token and its nonce, and sets the
//     session cookie.
//   - SignOut clears the session (POST, CSRF-checked).
//   - CSRFToken and CheckCSRF protect the pages' forms.
//
// Both cookies are sealed with AES-256-GCM under keys derived from
// Config.CookieKey, so every replica with the key reads them and no
// server-side store is needed. The login-state cookie (state, nonce, PKCE
// verifier, return-to path) lives ten minutes, is scoped to the callback's
// path and is cleared by the callback whatever its outcome. Codes,
// verifiers, tokens and cookie values are never logged, shown or put in an
// error.
//
// The identity is the ID token's issuer and subject only (User.Key, the
// same form as auth.Principal.Key); name and email are for display.
package browser

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// Config configures a SignIn.
type Config struct {
	// Issuer is the gateway's identity provider, exactly as in its ID
	// tokens' iss claim; its OpenID configuration is discovered from it.
	// https, except http on a loopback host.
	Issuer string
	// ClientID and ClientSecret are the gateway's client at the identity
	// provider (auth.browser in the config file). An empty secret makes a
	// public client, which PKCE still protects.
	ClientID, ClientSecret string
	// RedirectURL is the absolute URL the identity provider sends the
	// browser back to; Callback must be served at its path (CallbackPath).
	// Its origin is the gateway's public origin, trusted by CheckCSRF.
	RedirectURL string
	// Scopes are requested at sign-in; openid is added when missing. Empty
	// means openid, profile and email.
	Scopes []string
	// CookieName names the session cookie. Empty means
	// "__Host-switchboard-session" when Secure, else "switchboard-session".
	// The login-state cookie's name is derived from it.
	CookieName string
	// CookieKey is the 32-byte secret the cookies are sealed with (and the
	// CSRF tokens derived from). Every replica needs the same key; changing
	// it signs everyone out.
	CookieKey []byte
	// SessionTTL is how long a sign-in lasts. 0 means 8 hours.
	SessionTTL time.Duration
	// Secure marks the cookies Secure: set it whenever the gateway is
	// reached over https, which is always, outside development.
	Secure bool
	// Logger receives refused sign-ins, with reasons and never secrets.
	// nil means slog.Default().
	Logger *slog.Logger
}

// Defaults, and the login state's lifetime: long enough to type a password
// and pass a second factor, short enough that a stolen state is soon useless.
const (
	defaultSessionTTL = 8 * time.Hour
	loginTTL          = 10 * time.Minute
	exchangeTimeout   = 15 * time.Second
)

// SignIn signs browsers in through the gateway's identity provider and
// keeps them signed in with a sealed cookie. It is safe for concurrent use.
type SignIn struct {
	cfg      Config
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	client   *http.Client
	log      *slog.Logger
	sealer   *sealer
	csrfKey  []byte
	cop      *http.CrossOriginProtection
	page     *template.Template

	loginCookie  string // the login-state cookie's name
	callbackPath string // RedirectURL's path, the login cookie's Path
	spent        spentStates

	// now is the clock; tests replace it.
	now func() time.Time
}

// New checks cfg, discovers the identity provider's endpoints and keys with
// go-oidc (bounded by ctx) and prepares the flow. httpClient is used for
// discovery, the JWKS and the code exchange; nil means a client with a 10s
// timeout. Unlike auth.NewResourceServer, an identity provider that does not
// answer is an error: without its endpoints no one can sign in.
func New(ctx context.Context, cfg Config, httpClient *http.Client) (*SignIn, error) {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 10 * time.Second}
	}
	if err := normalize(&cfg); err != nil {
		return nil, err
	}
	redirect, _ := url.Parse(cfg.RedirectURL) // checked by normalize
	s := &SignIn{
		cfg:          cfg,
		client:       httpClient,
		log:          cfg.Logger,
		loginCookie:  loginCookieName(cfg.CookieName, cfg.Secure),
		callbackPath: redirect.EscapedPath(),
		cop:          http.NewCrossOriginProtection(),
		page:         template.Must(template.New("page").Parse(pageHTML)),
		now:          time.Now,
	}
	if s.callbackPath == "" {
		s.callbackPath = "/"
	}
	if redirect.Scheme == "https" && !cfg.Secure {
		s.log.Warn("browser: the redirectURL is https but the session cookie is not Secure; set secure", "redirectURL", cfg.RedirectURL)
	}
	if err := s.cop.AddTrustedOrigin(redirect.Scheme + "://" + redirect.Host); err != nil {
		return nil, fmt.Errorf("browser: redirectURL origin: %w", err)
	}
	var err error
	if s.csrfKey, err = hkdf.Key(sha256.New, cfg.CookieKey, nil, "switchboard auth/browser csrf", 32); err != nil {
		return nil, fmt.Errorf("browser: deriving the csrf key: %w", err)
	}
	s.sealer = &sealer{aead: vault.DeriveSealer(cfg.CookieKey, "switchboard auth/browser cookie seal")}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, httpClient), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("browser: discovering %s: %w", cfg.Issuer, err)
	}
	ep := provider.Endpoint()
	if err := checkURL("authorization_endpoint", ep.AuthURL); err != nil {
		return nil, err
	}
	if err := checkURL("token_endpoint", ep.TokenURL); err != nil {
		return nil, err
	}
	if ep.AuthStyle, err = authStyle(provider, cfg.ClientSecret); err != nil {
		return nil, err
	}
	s.oauth = oauth2.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Endpoint:     ep,
		RedirectURL:  cfg.RedirectURL,
		Scopes:       cfg.Scopes,
	}
	// The closure reads s.now at each call, so a test's clock applies to
	// the ID token's exp too.
	s.verifier = provider.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: func() time.Time { return s.now() }})
	return s, nil
}

// authStyle picks how the client authenticates at the token endpoint from
// the provider's token_endpoint_auth_methods_supported. x/oauth2's
// auto-detection would retry a refused exchange the other way, and a code
// is single-use: the retry turns the provider's real error into
// invalid_grant.
func authStyle(p *oidc.Provider, secret string) (oauth2.AuthStyle, error) {
	if secret == "" {
		return oauth2.AuthStyleInParams, nil // a public client sends only client_id
	}
	var meta struct {
		Methods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return 0, fmt.Errorf("browser: reading the discovery document: %w", err)
	}
	switch {
	case len(meta.Methods) == 0 || slices.Contains(meta.Methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader, nil // OpenID Connect's default
	case slices.Contains(meta.Methods, "client_secret_post"):
		return oauth2.AuthStyleInParams, nil
	}
	return 0, fmt.Errorf("browser: the identity provider supports neither client_secret_basic nor client_secret_post (it offers %q)", meta.Methods)
}

// normalize checks cfg and fills its defaults.
func normalize(cfg *Config) error {
	if err := checkURL("issuer", cfg.Issuer); err != nil {
		return err
	}
	if cfg.ClientID == "" {
		return errors.New("browser: clientId is required")
	}
	if err := checkURL("redirectURL", cfg.RedirectURL); err != nil {
		return err
	}
	if u, _ := url.Parse(cfg.RedirectURL); u.Fragment != "" || u.User != nil {
		return fmt.Errorf("browser: redirectURL %q must have no fragment or user", cfg.RedirectURL)
	}
	if len(cfg.CookieKey) != 32 {
		return fmt.Errorf("browser: cookieKey must be 32 bytes, not %d", len(cfg.CookieKey))
	}
	switch {
	case cfg.SessionTTL < 0:
		return errors.New("browser: negative sessionTTL")
	case cfg.SessionTTL == 0:
		cfg.SessionTTL = defaultSessionTTL
	}
	if cfg.CookieName == "" {
		cfg.CookieName = "switchboard-session"
		if cfg.Secure {
			cfg.CookieName = "__Host-switchboard-session"
		}
	}
	if err := (&http.Cookie{Name: cfg.CookieName, Value: "x"}).Valid(); err != nil {
		return fmt.Errorf("browser: cookieName: %w", err)
	}
	// Browsers drop prefixed cookies that are not Secure; better to say so
	// now than to loop through the identity provider.
	if !cfg.Secure && (strings.HasPrefix(cfg.CookieName, "__Host-") || strings.HasPrefix(cfg.CookieName, "__Secure-")) {
		return fmt.Errorf("browser: cookieName %q needs secure cookies", cfg.CookieName)
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "profile", "email"}
	} else if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// loginCookieName derives the login-state cookie's name. It cannot keep a
// __Host- prefix, which requires Path=/, because it is scoped to the
// callback's path; __Secure- keeps the same guarantee about Secure.
func loginCookieName(session string, secure bool) string {
	base := strings.TrimPrefix(strings.TrimPrefix(session, "__Host-"), "__Secure-")
	if secure {
		return "__Secure-" + base + "-login"
	}
	return base + "-login"
}

// checkURL requires an absolute https URL, or http on a loopback host.
func checkURL(what, s string) error {
	if err := auth.CheckSecureURL(what, s); err != nil {
		return fmt.Errorf("browser: %w", err)
	}
	return nil
}

// CallbackPath is the path Callback must be served at: RedirectURL's.
func (s *SignIn) CallbackPath() string { return s.callbackPath }

// User is a signed-in browser's person, from a verified ID token.
type User struct {
	// Issuer and Subject are the ID token's iss and sub: the identity.
	Issuer, Subject string
	// Name (name, else preferred_username) and Email are for display only;
	// never decide anything on them.
	Name, Email string
}

// Key is the stable identity, issuer "|" subject: the same form as
// auth.Principal.Key, so a connect state bound to a principal can be
// compared with the browser's user.
func (u User) Key() string { return u.Issuer + "|" + u.Subject }

// Is reports whether u is the principal p: same issuer, same subject. This
// is the check the connect page makes before acting for p.
func (u User) Is(p *auth.Principal) bool {
	return p != nil && u.Subject != "" && u.Issuer == p.Issuer && u.Subject == p.Subject
}

// LogValue logs the identity only, never the email (slog.LogValuer).
func (u User) LogValue() slog.Value {
	return slog.GroupValue(slog.String("sub", u.Subject), slog.String("iss", u.Issuer))
}

// signedIn is what Require puts in the context: the user and the session
// id the CSRF token is derived from.
type signedIn struct {
	user User
	sid  string
}

type userKey struct{}

// UserFrom returns the user Require signed in, and whether there is one.
func UserFrom(ctx context.Context) (User, bool) {
	si, ok := ctx.Value(userKey{}).(signedIn)
	return si.user, ok
}

package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// ResourceConfig configures a ResourceServer.
type ResourceConfig struct {
	// Issuer is the authorization server's issuer, exactly as in the iss
	// claim. https, except on a loopback host.
	Issuer string
	// Audience is the gateway's canonical MCP URL; tokens must name it in aud
	// (RFC 8707). It is also the resource of the metadata.
	Audience string
	// Scopes are required on every request.
	Scopes []string
	// JWKSURL skips discovery when set.
	JWKSURL string
	// Algorithms are the accepted JWS algorithms; empty = every asymmetric
	// one (RS*, PS*, ES*, EdDSA). HS* and none are refused even if listed.
	Algorithms []string
	// ClockSkew is the leeway on exp and nbf.
	ClockSkew time.Duration
	// Introspection verifies opaque tokens (RFC 7662); nil = refuse them.
	Introspection *IntrospectionConfig
	// ResourceMetadataURL is announced in WWW-Authenticate; "" = derived from
	// Audience by MetadataURL.
	ResourceMetadataURL string
	// ResourceName and DocumentationURL go into the metadata.
	ResourceName     string
	DocumentationURL string
	// Logger receives discovery problems and rejected tokens (reasons only,
	// never tokens). nil = slog.Default().
	Logger *slog.Logger
}

// IntrospectionConfig configures RFC 7662 introspection of opaque tokens.
type IntrospectionConfig struct {
	URL, ClientID, ClientSecret string
	// CacheTTL is how long an answer is reused (never past the token's exp);
	// 0 = 30s.
	CacheTTL time.Duration
}

// How often a failed discovery is retried, at most.
const discoveryRetry = 5 * time.Second

// ResourceServer authenticates requests to one protected resource: the
// gateway's own (NewResourceServer) or one of its endpoints (ForEndpoint).
type ResourceServer struct {
	// shared is the verification state every resource of the gateway uses:
	// one discovery, one JWKS cache, one introspection cache.
	*shared
	// cfg is this resource's configuration: Audience is its resource
	// identifier and ResourceMetadataURL its metadata's URL; the rest is the
	// gateway's.
	cfg ResourceConfig
	// accepted are the aud values a token may name to be used here
	// (acceptsAudience).
	accepted []string
	// endpoint is the endpoint's name; "" for the gateway's own resource.
	endpoint string
}

// shared is the state of a ResourceServer that its endpoints' servers share.
type shared struct {
	client *http.Client
	log    *slog.Logger
	algs   []string
	now    func() time.Time
	intro  *introspector

	mu          sync.Mutex
	verifier    *oidc.IDTokenVerifier
	keys        *keySet
	lastTry     time.Time
	lastErr     error
	jwksRefresh time.Duration // test hook: keySet.minRefresh

	// The endpoints' servers, by name (ForEndpoint). Reads are lock-free;
	// endpointsMu serialises insertions, so nEndpoints is exact.
	endpoints      sync.Map // name → *ResourceServer
	endpointsMu    sync.Mutex
	nEndpoints     int
	endpointLimit  int  // maxEndpoints; a test hook
	endpointsSpill bool // the limit was reached (warned once)
}

// NewResourceServer checks cfg and prepares verification. client is used
// for discovery, the JWKS and introspection (nil = a client with a 10s
// timeout).
//
// Discovery is attempted once here, bounded by ctx. If the issuer does not
// answer, the server still starts: Authenticate retries discovery (at most
// every 5s) and answers 503 until it succeeds, so a briefly unavailable
// identity provider does not stop the gateway. Configuration errors (bad
// URLs, refused algorithms, a discovery document naming another issuer) are
// returned at once.
func NewResourceServer(ctx context.Context, cfg ResourceConfig, client *http.Client) (*ResourceServer, error) {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if err := checkEndpoint("issuer", cfg.Issuer); err != nil {
		return nil, err
	}
	if u, err := url.Parse(cfg.Audience); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("auth: audience %q must be an absolute URL without fragment", cfg.Audience)
	}
	if cfg.JWKSURL != "" {
		if err := checkEndpoint("jwksURL", cfg.JWKSURL); err != nil {
			return nil, err
		}
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = asymmetricAlgs()
	}
	for _, a := range algs {
		if !slices.Contains(asymmetricAlgs(), a) {
			return nil, fmt.Errorf("auth: algorithm %q is not accepted; use %s", a, strings.Join(asymmetricAlgs(), ", "))
		}
	}
	if cfg.ClockSkew < 0 {
		return nil, errors.New("auth: negative clock skew")
	}
	if cfg.ResourceMetadataURL == "" {
		cfg.ResourceMetadataURL = MetadataURL(cfg.Audience)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rs := &ResourceServer{
		shared:   &shared{client: client, log: cfg.Logger, algs: algs, now: time.Now, jwksRefresh: defaultJWKSMinRefresh, endpointLimit: maxEndpoints},
		cfg:      cfg,
		accepted: []string{cfg.Audience},
	}
	if in := cfg.Introspection; in != nil {
		if err := checkEndpoint("introspection url", in.URL); err != nil {
			return nil, err
		}
		rs.intro = newIntrospector(*in, client, rs)
	}
	if err := rs.discover(ctx); err != nil {
		var fatal *configError
		if errors.As(err, &fatal) {
			return nil, err
		}
		rs.log.Warn("auth: issuer discovery failed; retrying on demand, requests get 503 meanwhile", "issuer", cfg.Issuer, "err", err)
	}
	return rs, nil
}

// configError is a discovery problem that retrying cannot fix.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func asymmetricAlgs() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

// checkEndpoint requires https, except http on a loopback host.
func checkEndpoint(what, s string) error {
	if err := CheckSecureURL(what, s); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// CheckSecureURL requires an absolute URL that is https, or http on a loopback host (tests and local
// development): the form every endpoint that carries a token or a grant must have. The error names what the URL
// is for; callers prefix their own package.
func CheckSecureURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute URL", what, s)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && IsLoopback(u.Hostname()):
	default:
		return fmt.Errorf("%s %q must use https (http only on a loopback host)", what, s)
	}
	return nil
}

// IsLoopback reports whether a host (no port) is localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MetadataURL returns the RFC 9728 metadata URL of a resource: the
// well-known path inserted between its origin and its path, as in
// https://mcp.example.com/.well-known/oauth-protected-resource/mcp.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + wellKnownResource + p
}

// discover finds the JWKS (OIDC discovery with go-oidc, then RFC 8414
// authorization server metadata) and builds the verifier.
func (rs *ResourceServer) discover(ctx context.Context) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.verifier != nil {
		return nil
	}
	if !rs.lastTry.IsZero() && rs.now().Sub(rs.lastTry) < discoveryRetry {
		return rs.lastErr
	}
	rs.lastTry = rs.now()
	jwksURL := rs.cfg.JWKSURL
	if jwksURL == "" {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		u, err := rs.discoverJWKS(dctx)
		if err != nil {
			rs.lastErr = err
			return err
		}
		if err := checkEndpoint("jwks_uri", u); err != nil {
			rs.lastErr = &configError{err.Error()}
			return rs.lastErr
		}
		jwksURL = u
	}
	rs.keys = newKeySet(jwksURL, rs.client, rs.algs, func() time.Time { return rs.now() })
	rs.keys.minRefresh = rs.jwksRefresh
	rs.verifier = oidc.NewVerifier(rs.cfg.Issuer, rs.keys, &oidc.Config{
		// aud is checked by Authenticate (acceptsAudience), after the
		// signature, against the resource the request is for: go-oidc's
		// ClientID takes one value, and this verifier serves the gateway's
		// resource and every endpoint's.
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: rs.algs,
		SkipExpiryCheck:      true, // checked below, with the configured skew
	})
	rs.lastErr = nil
	return nil
}

func (rs *ResourceServer) discoverJWKS(ctx context.Context) (string, error) {
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, rs.client), rs.cfg.Issuer)
	if err == nil {
		if err := p.Claims(&meta); err != nil || meta.JWKSURI == "" {
			return "", &configError{"auth: the issuer's OpenID configuration has no jwks_uri"}
		}
		return meta.JWKSURI, nil
	}
	var mismatch *oidc.IssuerMismatchError
	if errors.As(err, &mismatch) {
		return "", &configError{fmt.Sprintf("auth: the discovery document names issuer %q, not %q", mismatch.Discovered, mismatch.Provided)}
	}
	// RFC 8414: /.well-known/oauth-authorization-server inserted before the
	// issuer's path.
	u, perr := url.Parse(rs.cfg.Issuer)
	if perr != nil {
		return "", err
	}
	wk := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.EscapedPath(), "/")
	var as struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if aerr := rs.getJSON(ctx, wk, &as); aerr != nil {
		return "", fmt.Errorf("auth: discovery: %v; RFC 8414: %v", err, aerr)
	}
	if as.Issuer != rs.cfg.Issuer {
		return "", &configError{fmt.Sprintf("auth: the authorization server metadata names issuer %q, not %q", as.Issuer, rs.cfg.Issuer)}
	}
	if as.JWKSURI == "" {
		return "", &configError{"auth: the authorization server metadata has no jwks_uri"}
	}
	return as.JWKSURI, nil
}

func (rs *ResourceServer) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := rs.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.Unmarshal(body, v)
}

func (rs *ResourceServer) currentVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	rs.mu.Lock()
	v := rs.verifier
	rs.mu.Unlock()
	if v != nil {
		return v, nil
	}
	if err := rs.discover(ctx); err != nil {
		return nil, &UnavailableError{Err: err}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.verifier, nil
}

// Authenticate verifies the request's bearer token and returns its
// principal. The token is taken from the Authorization header only, never
// from the query string or body. Its aud must name this resource
// (acceptsAudience). Errors: ErrNoToken, *InvalidTokenError,
// *InsufficientScopeError (the configured scopes), *UnavailableError.
func (rs *ResourceServer) Authenticate(r *http.Request) (*Principal, error) {
	tok, err := bearerToken(r)
	if err != nil {
		return nil, err
	}
	var p *Principal
	if looksLikeJWT(tok) {
		p, err = rs.verifyJWT(r.Context(), tok)
	} else if rs.intro != nil {
		p, err = rs.intro.verify(r.Context(), tok)
	} else {
		err = invalid("not a JWT, and no introspection endpoint is configured")
	}
	if err != nil {
		return nil, err
	}
	if err := rs.acceptsAudience(stringsOf(p.Claims["aud"])); err != nil {
		return nil, err
	}
	if err := RequireScopes(p, rs.cfg.Scopes...); err != nil {
		return nil, err
	}
	return p, nil
}

// bearerToken reads "Authorization: Bearer <token>" (scheme
// case-insensitive, RFC 6750 §2.1).
func bearerToken(r *http.Request) (string, error) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", ErrNoToken
	}
	if len(vals) > 1 {
		return "", invalid("more than one Authorization header")
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoToken // another scheme: no bearer token was presented
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > 16<<10 || strings.ContainsAny(tok, " \t") {
		return "", invalid("malformed bearer token")
	}
	return tok, nil
}

// looksLikeJWT reports whether tok has the JWS compact form: three
// base64url parts.
func looksLikeJWT(tok string) bool {
	if strings.Count(tok, ".") != 2 {
		return false
	}
	for _, c := range tok {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (rs *ResourceServer) verifyJWT(ctx context.Context, tok string) (*Principal, error) {
	v, err := rs.currentVerifier(ctx)
	if err != nil {
		return nil, err
	}
	var unavailable error
	vctx := context.WithValue(ctx, unavailableSlot{}, &unavailable)
	idt, err := v.Verify(vctx, tok)
	if unavailable != nil {
		return nil, unavailable
	}
	if err != nil {
		return nil, invalid("%v", err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, invalid("claims: %v", err)
	}
	if err := rs.checkTimes(claims, true); err != nil {
		return nil, err
	}
	p := principalFromClaims(claims, tok, "")
	if p.Subject == "" {
		return nil, invalid("no sub claim")
	}
	return p, nil
}

// checkTimes checks exp (required for JWTs; optional in an introspection
// answer, RFC 7662) and nbf with the configured skew.
func (rs *ResourceServer) checkTimes(claims map[string]any, requireExp bool) error {
	now := rs.now()
	exp, ok := numeric(claims["exp"])
	if !ok && requireExp {
		return invalid("no exp claim")
	}
	if ok && now.After(time.Unix(int64(exp), 0).Add(rs.cfg.ClockSkew)) {
		return invalid("expired")
	}
	if nbf, ok := numeric(claims["nbf"]); ok && now.Add(rs.cfg.ClockSkew).Before(time.Unix(int64(nbf), 0)) {
		return invalid("not yet valid (nbf)")
	}
	return nil
}

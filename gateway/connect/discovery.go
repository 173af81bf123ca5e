package connect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// Timings of a discovery.
const (
	// DefaultDiscoveryTTL is how long a discovered authorization server and
	// client are reused when DiscoveryConfig.TTL is zero.
	DefaultDiscoveryTTL = time.Hour
	// failureTTL is how long a failed discovery is answered from the cache,
	// so that a dead authorization server is not asked at every call.
	failureTTL = 30 * time.Second
	// discoveryTimeout bounds one discovery (the probe, the metadata, a
	// registration and storing it). It runs detached from the caller that
	// started it, since others share its result.
	discoveryTimeout = 20 * time.Second
	// registrationLockTTL bounds the registration lock of a crashed replica,
	// beyond discoveryTimeout.
	registrationLockTTL = 30 * time.Second
	// secretMargin: a registered client secret expiring within it is
	// registered again rather than used.
	secretMargin = time.Minute
	// probeProtocolVersion is the MCP version of the probe's initialize.
	probeProtocolVersion = "2025-11-25"
	// movedEvery bounds how often Moved looks at an upstream's metadata
	// again: each 401 could otherwise cost a fetch.
	movedEvery = 10 * time.Second
	// maxProbeBody bounds what is read of the probe's refusal, to reuse the
	// connection; the rest is dropped.
	maxProbeBody = 64 << 10
)

// ErrUnknownUpstream is what Discovery.Flow's error is (errors.Is) for an
// upstream that is not configured for per-user OAuth.
var ErrUnknownUpstream = errors.New("connect: unknown upstream")

// DiscoveryStore is the part of the shared state (routing/state's
// RegistrationStore and GrantStore's TryLock) Discovery uses: the gateway's
// client registrations, sealed, and a lock so that one replica registers.
type DiscoveryStore interface {
	// GetRegistration returns the sealed registration for upstream at
	// issuer; state.ErrNotFound when there is none.
	GetRegistration(ctx context.Context, upstream, issuer string) ([]byte, error)
	// PutRegistration stores (or replaces) it.
	PutRegistration(ctx context.Context, upstream, issuer string, sealed []byte) error
	// TryLock takes key for at most ttl unless another caller holds it.
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// Our implementations of DiscoveryStore.
var (
	_ DiscoveryStore = (*state.Memory)(nil)
	_ DiscoveryStore = (*state.Redis)(nil)
)

// UpstreamOAuth is one user-oauth upstream's configuration.
type UpstreamOAuth struct {
	// Name is the upstream's configured name.
	Name string
	// URL is its MCP endpoint (the RFC 8707 resource).
	URL string
	// Scopes are the configured scopes; upstreamauth.SelectScopes merges
	// them with the challenge's, or falls back on the metadata's.
	Scopes []string
	// Client is a pre-registered client; nil means a Client ID Metadata
	// Document or dynamic registration, as the authorization server allows.
	Client *upstreamauth.Client
	// OmitResource leaves out the RFC 8707 resource parameter, for servers
	// that refuse it (Microsoft Entra ID).
	OmitResource bool
}

// DiscoveryConfig configures a Discovery.
type DiscoveryConfig struct {
	// Upstreams are the user-oauth upstreams. Required: at least one.
	Upstreams []UpstreamOAuth
	// PublicURL is the gateway's public base URL (https, or http on a
	// loopback host): the redirect URI is CallbackURL(PublicURL), and the
	// Client ID Metadata Document, offered when PublicURL is https, is
	// MetadataDocumentURL(PublicURL) (serve it: HandlerConfig.ClientIDURL).
	PublicURL string
	// ClientName is the client_name of registrations; "" means
	// "Switchboard". Give the Handler the same one for the metadata
	// document.
	ClientName string
	// Store keeps the registrations and the registration lock. Required.
	Store DiscoveryStore
	// Sealer seals the registrations (they may hold a client secret).
	// Required.
	Sealer Sealer
	// HTTPClient reaches the upstreams and their authorization servers;
	// nil means http.DefaultClient.
	HTTPClient *http.Client
	// DPoP is the replica's DPoP key: an authorization server that offers
	// DPoP (RFC 9449) gets a proof with every token request and binds its
	// tokens to the key. nil: Bearer tokens only.
	DPoP *auth.DPoPKey
	// Logger receives discoveries and their failures, never a secret. nil
	// means slog.Default().
	Logger *slog.Logger
	// TTL is how long a discovered server and client are reused; 0 means
	// DefaultDiscoveryTTL.
	TTL time.Duration
}

// Discovery implements Flows for the configured upstreams, as the MCP
// authorization specification (2025-11-25) has a client find its way: the
// upstream's 401 challenge, its protected-resource metadata, its
// authorization server's metadata, then a client identity (pre-registered,
// the gateway's Client ID Metadata Document, or a dynamic registration kept
// in the store so that every replica uses one). Each upstream's flow is
// reused for the TTL, a failure for 30 seconds; callers that need the same
// discovery at once share it. It is safe for concurrent use.
type Discovery struct {
	upstreams  map[string]UpstreamOAuth
	callback   string
	cimdURL    string // "": no metadata document (the public URL is not https)
	clientName string
	store      DiscoveryStore
	sealer     Sealer
	http       *http.Client
	dpop       *auth.DPoPKey
	log        *slog.Logger
	ttl        time.Duration
	group      singleflight.Group

	mu    sync.Mutex
	cache map[string]*discovered
	// rejected is, by upstream, the registered client_id its authorization
	// server refused (Forget): a stored registration with that id is
	// replaced rather than read back.
	rejected map[string]string
	// gen counts each upstream's Forgets, so that a discovery that was in
	// flight during one does not cache what it found.
	gen map[string]uint64
	// looked is when Moved last looked at each upstream's metadata.
	looked map[string]time.Time
}

// discovered is one upstream's cached discovery: a flow, or the error.
type discovered struct {
	flow     *upstreamauth.Flow
	identity upstreamauth.Identity
	clientID string // the registered one, for Forget; "" otherwise
	err      error
	expires  time.Time
}

var _ Flows = (*Discovery)(nil)

// NewDiscovery checks cfg and builds the Discovery.
func NewDiscovery(cfg DiscoveryConfig) (*Discovery, error) {
	if cfg.Store == nil || cfg.Sealer == nil {
		return nil, errors.New("connect: discovery: Store and Sealer are required")
	}
	if len(cfg.Upstreams) == 0 {
		return nil, errors.New("connect: discovery: no upstreams")
	}
	if err := auth.CheckSecureURL("public URL", cfg.PublicURL); err != nil {
		return nil, fmt.Errorf("connect: discovery: %w", err)
	}
	if cfg.TTL < 0 {
		return nil, fmt.Errorf("connect: discovery: TTL %v", cfg.TTL)
	}
	d := &Discovery{
		upstreams:  map[string]UpstreamOAuth{},
		callback:   CallbackURL(cfg.PublicURL),
		clientName: cfg.ClientName,
		store:      cfg.Store,
		sealer:     cfg.Sealer,
		http:       cfg.HTTPClient,
		dpop:       cfg.DPoP,
		log:        cfg.Logger,
		ttl:        cfg.TTL,
		cache:      map[string]*discovered{},
		rejected:   map[string]string{},
		gen:        map[string]uint64{},
		looked:     map[string]time.Time{},
	}
	// upstreamauth.ChooseIdentity refuses a client_id URL that is not https
	// (the authorization server fetches it): with a loopback http gateway
	// the choice falls through to registration instead.
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Scheme == "https" {
		d.cimdURL = MetadataDocumentURL(cfg.PublicURL)
	}
	if d.clientName == "" {
		d.clientName = "Switchboard"
	}
	if d.http == nil {
		d.http = http.DefaultClient
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.ttl == 0 {
		d.ttl = DefaultDiscoveryTTL
	}
	for _, u := range cfg.Upstreams {
		if u.Name == "" || strings.ContainsRune(u.Name, 0) {
			return nil, fmt.Errorf("connect: discovery: upstream name %q: empty or with NUL", u.Name)
		}
		if _, dup := d.upstreams[u.Name]; dup {
			return nil, fmt.Errorf("connect: discovery: upstream %q twice", u.Name)
		}
		if err := auth.CheckSecureURL("URL", u.URL); err != nil {
			return nil, fmt.Errorf("connect: discovery: upstream %s: %w", u.Name, err)
		}
		if u.Client != nil && u.Client.ID == "" {
			return nil, fmt.Errorf("connect: discovery: upstream %s: a pre-registered client without a client id", u.Name)
		}
		u.Scopes = slices.Clone(u.Scopes)
		if u.Client != nil {
			c := *u.Client
			u.Client = &c
		}
		d.upstreams[u.Name] = u
	}
	return d, nil
}

// Scopes returns upstream's configured scopes (nil for an unknown one), for
// the connections page.
func (d *Discovery) Scopes(upstream string) []string {
	return slices.Clone(d.upstreams[upstream].Scopes)
}

// Flow implements Flows: upstream's flow, from the cache while it lasts,
// else discovered. Its error wraps ErrUnknownUpstream for an upstream not
// configured, and otherwise says what failed and what to check; a failure
// is answered from the cache for 30 seconds.
func (d *Discovery) Flow(ctx context.Context, upstream string) (*upstreamauth.Flow, error) {
	u, ok := d.upstreams[upstream]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownUpstream, upstream)
	}
	if e := d.cached(upstream); e != nil {
		return e.flow, e.err
	}
	v, _, _ := d.group.Do(upstream, func() (any, error) {
		// A discovery that finished between the look-up and here.
		if e := d.cached(upstream); e != nil {
			return e, nil
		}
		d.mu.Lock()
		gen, rejected := d.gen[upstream], d.rejected[upstream]
		d.mu.Unlock()
		// Detached: the callers sharing it must not fail because the
		// first one left. Bounded, so that none waits for long.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discoveryTimeout)
		defer cancel()
		e := d.discover(dctx, u, rejected)
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen[upstream] == gen {
			d.cache[upstream] = e
			if e.err == nil && d.rejected[upstream] == rejected {
				delete(d.rejected, upstream)
			}
		}
		return e, nil
	})
	e := v.(*discovered)
	return e.flow, e.err
}

// cached is upstream's unexpired cache entry, or nil.
func (d *Discovery) cached(upstream string) *discovered {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.cache[upstream]
	if e == nil || !time.Now().Before(e.expires) {
		return nil
	}
	return e
}

// Forget drops upstream's cached flow, so that the next Flow discovers
// again: for when its authorization server rejects the client
// (invalid_client). A registered client is then not read back from the
// store but registered again, once across the replicas: a replica that
// forgets later finds the new registration, whose id differs from the one
// it saw rejected.
func (d *Discovery) Forget(upstream string) {
	if _, ok := d.upstreams[upstream]; !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.cache[upstream]; e != nil && e.clientID != "" {
		d.rejected[upstream] = e.clientID
	}
	delete(d.cache, upstream)
	d.gen[upstream]++
	d.group.Forget(upstream)
}

// Moved is asked after the upstream refused a person's token (401), with
// its challenge: it reports whether the upstream's protected-resource
// metadata now names another authorization server than the cached flow's
// (SEP-2352, an authorization server migration). The cached flow is then
// dropped, so that the next Flow discovers the new server and registers
// there (registrations are kept by issuer: the old client is never shown to
// the new server), and grants of the old server are not refreshed at the
// new one (Tokens compares the grant's issuer). It looks at most once every
// 10 seconds per upstream; a failure to look is no move.
func (d *Discovery) Moved(ctx context.Context, upstream string, ch upstreamauth.Challenge) bool {
	u, ok := d.upstreams[upstream]
	if !ok {
		return false
	}
	d.mu.Lock()
	e, now := d.cache[upstream], time.Now()
	if e == nil || e.flow == nil || now.Sub(d.looked[upstream]) < movedEvery {
		d.mu.Unlock()
		return false
	}
	d.looked[upstream] = now
	d.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	srv, err := upstreamauth.Discover(dctx, d.http, u.URL, ch)
	if err != nil || srv.Issuer == e.flow.Issuer() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cache[upstream] == e {
		delete(d.cache, upstream)
		d.gen[upstream]++
		d.group.Forget(upstream)
	}
	d.log.Info("connect: the upstream's authorization server changed; discovering and registering again",
		"upstream", upstream, "from", e.flow.Issuer(), "to", srv.Issuer)
	return true
}

// discover finds upstream's flow; the entry holds the error when it fails.
func (d *Discovery) discover(ctx context.Context, u UpstreamOAuth, rejected string) *discovered {
	e, err := d.discoverFlow(ctx, u, rejected)
	now := time.Now()
	if err != nil {
		d.log.Warn("connect: discovery failed; the upstream cannot be connected to for now",
			"upstream", u.Name, "retryIn", failureTTL, "err", err)
		return &discovered{err: err, expires: now.Add(failureTTL)}
	}
	d.log.Info("connect: discovered the upstream's authorization", "upstream", u.Name, "identity", e.identity)
	return e
}

// discoverFlow is the specification's discovery, from the probe to the
// flow. Each error names the step and what to check.
func (d *Discovery) discoverFlow(ctx context.Context, u UpstreamOAuth, rejected string) (*discovered, error) {
	ch, err := d.probe(ctx, u.URL)
	if err != nil {
		return nil, fmt.Errorf("connect: upstream %s: reaching %s: %w; check that the upstream is up and its URL is right",
			u.Name, u.URL, err)
	}
	srv, err := upstreamauth.Discover(ctx, d.http, u.URL, ch)
	if err != nil {
		return nil, fmt.Errorf("connect: upstream %s: discovering its authorization server: %w; %s",
			u.Name, err, discoverHint(err))
	}
	scopes := upstreamauth.SelectScopes(u.Scopes, ch, srv)
	client, identity, err := upstreamauth.ChooseIdentity(srv, u.Client, d.cimdURL)
	if err != nil {
		return nil, fmt.Errorf("connect: upstream %s: %w", u.Name, err)
	}
	e := &discovered{identity: identity, expires: time.Now().Add(d.ttl)}
	if identity == upstreamauth.IdentityDynamicRegistration {
		client, err = d.registered(ctx, u.Name, srv, scopes, rejected)
		if err != nil {
			return nil, err
		}
		e.clientID = client.ID
		if exp := client.SecretExpiresAt; !exp.IsZero() && exp.Add(-secretMargin).Before(e.expires) {
			e.expires = exp.Add(-secretMargin) // registered again once the secret is near its end
		}
	}
	e.flow, err = upstreamauth.NewFlow(upstreamauth.FlowConfig{
		Server:       srv,
		Client:       client,
		RedirectURL:  d.callback,
		Scopes:       scopes,
		OmitResource: u.OmitResource,
		HTTPClient:   d.http,
		DPoP:         d.dpop,
	})
	if err != nil {
		return nil, fmt.Errorf("connect: upstream %s: %w", u.Name, err)
	}
	return e, nil
}

// discoverHint says what to check after Discover failed.
func discoverHint(err error) string {
	switch {
	case errors.Is(err, upstreamauth.ErrInsecureURL):
		return "every URL of the upstream's authorization must be https"
	case errors.Is(err, upstreamauth.ErrNoResourceMetadata), errors.Is(err, upstreamauth.ErrResourceMismatch):
		return "check the upstream's URL, and that it serves protected-resource metadata (RFC 9728) for that URL"
	case errors.Is(err, upstreamauth.ErrNoAuthorizationServer), errors.Is(err, upstreamauth.ErrIssuerMismatch),
		errors.Is(err, upstreamauth.ErrNoPKCE):
		return "check the authorization server's metadata (RFC 8414): its issuer, endpoints and PKCE S256"
	default:
		return "check that the gateway can reach the upstream and its authorization server"
	}
}

// probe sends the upstream an initialize without credentials and returns
// the Bearer challenge of its 401. An upstream that lets an anonymous
// initialize in (the specification lets a server guard only what follows)
// is asked once more, with a tools/list outside any session, whose 401 says
// which scope the upstream wants first; without one, the challenge is
// empty and Discover tries the well-known URLs. Any other answer, or a 401
// without a challenge, gives an empty challenge. Only a failure to get an
// answer is an error.
func (d *Discovery) probe(ctx context.Context, mcpURL string) (upstreamauth.Challenge, error) {
	ch, refused, err := d.probeWith(ctx, mcpURL, map[string]any{
		"jsonrpc": "2.0",
		"id":      1,
		"method":  "initialize",
		"params": map[string]any{
			"protocolVersion": probeProtocolVersion,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]any{"name": d.clientName, "version": "discovery"},
		},
	})
	if err != nil || refused {
		return ch, err
	}
	ch, _, err = d.probeWith(ctx, mcpURL, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
	if err != nil {
		// The first answer was an answer: the well-known URLs remain.
		return upstreamauth.Challenge{}, nil
	}
	return ch, nil
}

// probeWith POSTs msg without credentials and returns the Bearer challenge
// of a 401, and whether it was one.
func (d *Discovery) probeWith(ctx context.Context, mcpURL string, msg map[string]any) (upstreamauth.Challenge, bool, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return upstreamauth.Challenge{}, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, bytes.NewReader(body))
	if err != nil {
		return upstreamauth.Challenge{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if msg["method"] != "initialize" {
		req.Header.Set("MCP-Protocol-Version", probeProtocolVersion)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return upstreamauth.Challenge{}, false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusUnauthorized {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && resp.StatusCode/100 == 2 {
			// It let an anonymous client in: end the session it opened.
			d.endSession(ctx, mcpURL, sid)
		}
		return upstreamauth.Challenge{}, false, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	// RFC 9110 §5.3: several fields are one comma-separated list.
	ch, _ := upstreamauth.ParseChallenge(strings.Join(resp.Header.Values("WWW-Authenticate"), ", "))
	return ch, true, nil
}

// endSession deletes the MCP session the probe opened, best effort.
func (d *Discovery) endSession(ctx context.Context, mcpURL, sid string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, mcpURL, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", probeProtocolVersion)
	if resp, err := d.http.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

// registration is what is sealed in the store for an upstream at an
// authorization server: the client it registered, and what it was
// registered with, to tell when it no longer fits.
type registration struct {
	Client       upstreamauth.Client `json:"client"`
	RedirectURI  string              `json:"redirectUri"`
	Scopes       []string            `json:"scopes,omitempty"`
	RegisteredAt time.Time           `json:"registeredAt"`
}

// registrationLockKey names the lock of upstream's registration at issuer:
// hashed, since an issuer may be longer than a lock key may.
func registrationLockKey(upstream, issuer string) string {
	sum := sha256.Sum256([]byte(upstream + "\x00" + issuer))
	return "registration:" + hex.EncodeToString(sum[:])
}

// registered returns the gateway's registered client at srv for upstream:
// the stored one when it fits, else a new registration, made under the
// store's lock so that the replicas register once (a replica that finds the
// lock taken waits and reads the winner's), and stored sealed.
func (d *Discovery) registered(ctx context.Context, upstream string, srv *upstreamauth.Server, scopes []string,
	rejected string) (upstreamauth.Client, error) {
	if strings.ContainsRune(srv.Issuer, 0) {
		return upstreamauth.Client{}, fmt.Errorf("connect: upstream %s: an issuer with NUL", upstream)
	}
	if c, ok := d.loadRegistration(ctx, upstream, srv.Issuer, scopes, rejected); ok {
		return c, nil
	}
	for {
		unlock, ok, err := d.store.TryLock(ctx, registrationLockKey(upstream, srv.Issuer), registrationLockTTL)
		if err != nil {
			return upstreamauth.Client{}, fmt.Errorf("connect: upstream %s: locking the registration: %w", upstream, err)
		}
		if ok {
			defer unlock()
			// Read again under the lock: another replica may have
			// registered between the read and the lock.
			if c, ok := d.loadRegistration(ctx, upstream, srv.Issuer, scopes, rejected); ok {
				return c, nil
			}
			return d.register(ctx, upstream, srv, scopes)
		}
		if err := timerWait(ctx); err != nil {
			return upstreamauth.Client{}, fmt.Errorf("connect: upstream %s: waiting for another replica's registration: %w",
				upstream, err)
		}
		if c, ok := d.loadRegistration(ctx, upstream, srv.Issuer, scopes, rejected); ok {
			return c, nil
		}
	}
}

// loadRegistration reads the stored registration and reports whether it
// fits: it opens, it is for the current redirect URI and scopes, its secret
// is not about to expire, and it is not the client the server rejected. A
// failure to read is logged and taken as none: registering again costs less
// than not connecting.
func (d *Discovery) loadRegistration(ctx context.Context, upstream, issuer string, scopes []string,
	rejected string) (upstreamauth.Client, bool) {
	sealed, err := d.store.GetRegistration(ctx, upstream, issuer)
	if errors.Is(err, state.ErrNotFound) {
		return upstreamauth.Client{}, false
	}
	if err != nil {
		d.log.Warn("connect: reading the registration failed", "upstream", upstream, "issuer", issuer, "err", err)
		return upstreamauth.Client{}, false
	}
	plain, err := d.sealer.Open(sealed, registrationAAD(upstream, issuer))
	if err != nil {
		d.log.Warn("connect: the stored registration does not open; registering again",
			"upstream", upstream, "issuer", issuer, "err", err)
		return upstreamauth.Client{}, false
	}
	var reg registration
	if err := json.Unmarshal(plain, &reg); err != nil || reg.Client.ID == "" {
		// json's error is not kept: it may quote the secret.
		d.log.Warn("connect: the stored registration is unreadable; registering again", "upstream", upstream, "issuer", issuer)
		return upstreamauth.Client{}, false
	}
	why := ""
	switch exp := reg.Client.SecretExpiresAt; {
	case reg.RedirectURI != d.callback:
		why = "the redirect URI changed"
	case !covers(reg.Scopes, scopes):
		why = "the scopes changed"
	case !exp.IsZero() && !time.Now().Add(secretMargin).Before(exp):
		why = "its client secret expires"
	case reg.Client.ID == rejected:
		why = "the authorization server rejected the client"
	}
	if why != "" {
		d.log.Info("connect: the stored registration no longer fits; registering again",
			"upstream", upstream, "issuer", issuer, "why", why)
		return upstreamauth.Client{}, false
	}
	return reg.Client, true
}

// covers reports whether the scopes registered include every one wanted.
// None registered leaves it to the server, which then allows what it
// defaults to; a registration with none is kept only while none is wanted.
func covers(registered, wanted []string) bool {
	for _, s := range wanted {
		if !slices.Contains(registered, s) {
			return false
		}
	}
	return true
}

// register registers the gateway at srv and stores the result sealed. A
// failure to store is logged, and the client used all the same: this
// replica can connect, and the next discovery registers again.
func (d *Discovery) register(ctx context.Context, upstream string, srv *upstreamauth.Server, scopes []string) (upstreamauth.Client, error) {
	c, err := upstreamauth.Register(ctx, d.http, srv, upstreamauth.Registration{
		Name:         d.clientName,
		RedirectURIs: []string{d.callback},
		Scopes:       scopes,
	})
	if err != nil {
		return upstreamauth.Client{}, fmt.Errorf("connect: upstream %s: registering the gateway at %s: %w; "+
			"check that its registration endpoint accepts the redirect URI %s, or configure a pre-registered client",
			upstream, srv.Issuer, err, d.callback)
	}
	reg := registration{Client: c, RedirectURI: d.callback, Scopes: slices.Clone(scopes), RegisteredAt: time.Now().Round(0)}
	plain, err := json.Marshal(reg)
	if err != nil {
		return upstreamauth.Client{}, fmt.Errorf("connect: encoding the registration: %w", err)
	}
	sealed, err := d.sealer.Seal(plain, registrationAAD(upstream, srv.Issuer))
	if err != nil {
		return upstreamauth.Client{}, fmt.Errorf("connect: sealing the registration: %w", err)
	}
	if err := d.store.PutRegistration(ctx, upstream, srv.Issuer, sealed); err != nil {
		d.log.Error("connect: storing the registration failed; it is used here, and registered again at the next discovery",
			"upstream", upstream, "issuer", srv.Issuer, "err", err)
	}
	d.log.Info("connect: registered the gateway", "upstream", upstream, "issuer", srv.Issuer, "client", c)
	return c, nil
}

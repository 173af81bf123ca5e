package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// CredentialSource gives the headers the gateway sends with a request to
// an upstream: the gateway's own credentials for that upstream. The
// client's token is never among them. p is the caller (nil without auth);
// only token exchange uses it.
type CredentialSource interface {
	Header(ctx context.Context, p *Principal) (http.Header, error)
}

// earlyRefresh is how long before expiry an upstream token is replaced.
const earlyRefresh = 60 * time.Second

// CredentialOptions says which credentials the gateway sends to one
// upstream. At most one of ClientCredentials, TokenExchange, IDJAG and
// WorkloadIdentity is used, in that order.
type CredentialOptions struct {
	// Upstream names the upstream in errors.
	Upstream string
	// Headers are sent as they are.
	Headers map[string]string
	// HeaderFiles maps a header name to the file its value is read from (see
	// NewStaticSource).
	HeaderFiles map[string]string
	// ClientCredentials, when set, adds a token the gateway obtains for
	// itself.
	ClientCredentials *ClientCredentialsConfig
	// TokenExchange, when set, adds a token exchanged for each caller's.
	TokenExchange *TokenExchangeConfig
	// IDJAG, when set, adds a token obtained with each caller's identity assertion through an ID-JAG.
	IDJAG *IDJAGConfig
	// WorkloadIdentity, when set, adds the gateway's own token from the JWT bearer grant with its workload token.
	WorkloadIdentity *WorkloadIdentityConfig
	// Shared, when set with IDJAG, is where the tokens obtained for each person are kept sealed, for every replica
	// (sharedtokens.go); nil keeps them in this source's memory only.
	Shared *SharedTokens
}

// ClientCredentialsConfig configures the OAuth client credentials grant
// toward an upstream.
type ClientCredentialsConfig struct {
	TokenURL, ClientID, ClientSecret string
	Scopes                           []string
	// Resource is the RFC 8707 resource indicator sent to the token
	// endpoint: the upstream's URL.
	Resource string
	// KeyFile, instead of ClientSecret, authenticates the client with
	// private_key_jwt (RFC 7523): a PEM private key that signs a fresh
	// client assertion for each token request.
	KeyFile string
	// AssertionAudience is the assertion's aud: the authorization server's
	// issuer, or "" for TokenURL.
	AssertionAudience string
}

// NewCredentialSource builds the source for one upstream: its static
// headers, its file headers, and its OAuth credentials, merged. It returns
// nil (and no error) for an upstream with none of them. The files are read
// now; a file that cannot be read is an error. ctx only bounds that; the
// source lives until the process ends.
func NewCredentialSource(ctx context.Context, o CredentialOptions, client *http.Client) (CredentialSource, error) {
	var parts multiSource
	if len(o.Headers) > 0 || len(o.HeaderFiles) > 0 {
		s, err := NewStaticSource(o.Headers, o.HeaderFiles)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w", o.Upstream, err)
		}
		parts = append(parts, s)
	}
	if c := o.ClientCredentials; c != nil && c.KeyFile != "" {
		src, err := newPrivateKeyJWTSource(ctx, *c, client)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w", o.Upstream, err)
		}
		parts = append(parts, src)
	} else if c != nil {
		parts = append(parts, NewClientCredentialsSource(ctx, clientcredentials.Config{
			ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.TokenURL, Scopes: c.Scopes,
			EndpointParams: url.Values{"resource": {c.Resource}},
		}, client))
	} else if t := o.TokenExchange; t != nil {
		parts = append(parts, NewTokenExchangeSource(*t, client))
	} else if j := o.IDJAG; j != nil {
		s := NewIDJAGSource(*j, client)
		if sh := o.Shared; sh != nil && sh.Store != nil && sh.Sealer != nil {
			s.shared = &sharedIn{SharedTokens: sh, upstream: o.Upstream, binding: idJAGBinding(*j)}
		}
		if j.SubjectTokenFile != "" {
			fv := &fileValue{header: "the ID token file", path: j.SubjectTokenFile}
			if err := fv.load(); err != nil {
				return nil, fmt.Errorf("upstream %s: %w", o.Upstream, err)
			}
			s.own = idTokenFile{s: s, file: fv}
		} else {
			// As token exchange does: with no person behind a request, the gateway is itself, by the client
			// credentials grant with the same client at the same authorization server.
			s.own = NewClientCredentialsSource(ctx, clientcredentials.Config{
				ClientID: j.ClientID, ClientSecret: j.ClientSecret, TokenURL: j.TokenURL, Scopes: j.Scopes,
				EndpointParams: url.Values{"resource": {j.Resource}},
			}, client)
		}
		parts = append(parts, s)
	} else if w := o.WorkloadIdentity; w != nil {
		s, err := NewWorkloadIdentitySource(ctx, *w, client)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w", o.Upstream, err)
		}
		parts = append(parts, s)
	}
	switch len(parts) {
	case 0:
		return nil, nil
	case 1:
		return parts[0], nil
	}
	return parts, nil
}

// multiSource merges sources; later ones win on a shared header name.
type multiSource []CredentialSource

func (m multiSource) Header(ctx context.Context, p *Principal) (http.Header, error) {
	out := http.Header{}
	for _, s := range m {
		h, err := s.Header(ctx, p)
		if err != nil {
			return nil, err
		}
		for k, v := range h {
			out[k] = v
		}
	}
	return out, nil
}

// StaticSource sends fixed header values, some read from files. A file is
// read at start and again, at most once a second, when its modification
// time or size changes (a rotated Kubernetes secret); if a reread fails the
// last good value is kept.
type StaticSource struct {
	fixed http.Header
	files map[string]*fileValue
}

type fileValue struct {
	header, path string

	mu      sync.Mutex
	value   string
	mod     time.Time
	size    int64
	checked time.Time
}

// NewStaticSource reads the files: values maps header names to values,
// files header names to paths. A file's content is trimmed of surrounding
// white space; for Authorization, content without a space (a bare token) is
// sent as "Bearer <content>".
func NewStaticSource(values, files map[string]string) (*StaticSource, error) {
	s := &StaticSource{fixed: http.Header{}, files: map[string]*fileValue{}}
	for k, v := range values {
		s.fixed.Set(k, v)
	}
	for _, k := range slices.Sorted(maps.Keys(files)) {
		fv := &fileValue{header: k, path: files[k]}
		if err := fv.load(); err != nil {
			return nil, err
		}
		s.files[k] = fv
	}
	return s, nil
}

// Header implements CredentialSource.
func (s *StaticSource) Header(context.Context, *Principal) (http.Header, error) {
	h := s.fixed.Clone()
	for k, fv := range s.files {
		h.Set(k, fv.get())
	}
	return h, nil
}

func (fv *fileValue) load() error {
	st, err := os.Stat(fv.path)
	if err != nil {
		return fmt.Errorf("header %s: %w", fv.header, err)
	}
	data, err := os.ReadFile(fv.path)
	if err != nil {
		return fmt.Errorf("header %s: %w", fv.header, err)
	}
	v := strings.TrimSpace(string(data))
	if v == "" || strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("header %s: %s is empty or has more than one line", fv.header, fv.path)
	}
	if strings.EqualFold(fv.header, "Authorization") && !strings.Contains(v, " ") {
		v = "Bearer " + v
	}
	fv.mu.Lock()
	fv.value, fv.mod, fv.size, fv.checked = v, st.ModTime(), st.Size(), time.Now()
	fv.mu.Unlock()
	return nil
}

func (fv *fileValue) get() string {
	fv.mu.Lock()
	due := time.Since(fv.checked) >= time.Second
	if due {
		fv.checked = time.Now()
	}
	v, mod, size := fv.value, fv.mod, fv.size
	fv.mu.Unlock()
	if due {
		if st, err := os.Stat(fv.path); err == nil && (!st.ModTime().Equal(mod) || st.Size() != size) {
			if fv.load() == nil {
				fv.mu.Lock()
				v = fv.value
				fv.mu.Unlock()
			}
		}
	}
	return v
}

// ClientCredentialsSource sends a token the gateway obtains for itself
// with the client credentials grant. The token is reused until a minute
// before it expires, then replaced.
type ClientCredentialsSource struct {
	ts oauth2.TokenSource
}

// NewClientCredentialsSource returns the source. Put the upstream's URL in
// cfg.EndpointParams["resource"] (RFC 8707). client (nil = default) makes
// the token requests; ctx only carries it, its cancellation is ignored.
func NewClientCredentialsSource(ctx context.Context, cfg clientcredentials.Config, client *http.Client) *ClientCredentialsSource {
	ctx = context.WithoutCancel(ctx)
	if client != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	}
	return &ClientCredentialsSource{ts: oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(ctx), earlyRefresh)}
}

// Header implements CredentialSource.
func (s *ClientCredentialsSource) Header(context.Context, *Principal) (http.Header, error) {
	t, err := s.ts.Token()
	if err != nil {
		return nil, fmt.Errorf("client credentials: %w", err)
	}
	return http.Header{"Authorization": {t.Type() + " " + t.AccessToken}}, nil
}

// TokenExchangeConfig configures RFC 8693 token exchange.
type TokenExchangeConfig struct {
	TokenURL, ClientID, ClientSecret string
	// Audience and Resource name the upstream (either or both).
	Audience, Resource string
	Scopes             []string
}

// RFC 8693 identifiers.
const (
	grantTokenExchange  = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess     = "urn:ietf:params:oauth:token-type:access_token"
	maxExchangeCache    = 10000
	defaultExchangedTTL = 5 * time.Minute
)

// TokenExchangeSource exchanges the caller's token for a token for the
// upstream (RFC 8693), per principal, cached until shortly before the new
// token (or the caller's) expires. The caller's token goes only to the
// configured token endpoint.
type TokenExchangeSource struct {
	cfg    TokenExchangeConfig
	client *http.Client
	now    func() time.Time
	// own is the gateway's own identity (client credentials with the same client), used where no user is
	// behind a request: the session that feeds the catalog, and a per-user session's own housekeeping. For
	// ID-JAG it is the one person's ID token file, or nil.
	own CredentialSource

	// fetch gets a caller's token: exchange (RFC 8693), or idJAG's two steps (NewIDJAGSource).
	fetch func(ctx context.Context, p *Principal) (exchanged, error)
	// perPerson keys the cache by the caller's identity (issuer and subject) rather than by their token: ID-JAG's
	// grant is about the person (sharedtokens.go says why). A caller without a subject (the ID token file) is
	// still keyed by token.
	perPerson bool
	// shared, when set, is the store where a person's token is looked for before fetch, and kept after it.
	shared *sharedIn

	mu       sync.Mutex
	cache    map[[32]byte]exchanged
	inflight map[[32]byte]*exchangeCall
}

type exchanged struct {
	header  string
	expires time.Time
}

type exchangeCall struct {
	done chan struct{}
	val  exchanged
	err  error
}

// NewTokenExchangeSource returns the source; client nil = a client with a
// 10s timeout.
func NewTokenExchangeSource(cfg TokenExchangeConfig, client *http.Client) *TokenExchangeSource {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	params := url.Values{}
	if cfg.Resource != "" {
		params.Set("resource", cfg.Resource)
	}
	if cfg.Audience != "" {
		params.Set("audience", cfg.Audience)
	}
	own := NewClientCredentialsSource(context.Background(), clientcredentials.Config{
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.TokenURL, Scopes: cfg.Scopes,
		EndpointParams: params,
	}, client)
	s := &TokenExchangeSource{cfg: cfg, client: client, now: time.Now, own: own,
		cache: map[[32]byte]exchanged{}, inflight: map[[32]byte]*exchangeCall{}}
	s.fetch = s.exchange
	return s
}

// ErrNoSubjectToken is returned by token exchange for a caller without a
// token (no auth configured, or a Principal not made by Authenticate).
var ErrNoSubjectToken = errors.New("auth: token exchange needs an authenticated caller")

// Header implements CredentialSource.
//
// With no user behind the request (the catalog's session lists tools for everyone) it authenticates as the
// gateway itself, by client credentials with the same client: the upstream can tell the two apart, and no
// user's identity is borrowed for work done for all.
func (s *TokenExchangeSource) Header(ctx context.Context, p *Principal) (http.Header, error) {
	if p == nil || p.token == "" {
		if s.own == nil {
			return nil, ErrNoSubjectToken
		}
		return s.own.Header(ctx, nil)
	}
	person, key := s.keyOf(p)
	now := s.now()
	s.mu.Lock()
	if e, ok := s.cache[key]; ok && now.Before(e.expires) {
		s.mu.Unlock()
		return http.Header{"Authorization": {e.header}}, nil
	}
	call, running := s.inflight[key]
	if !running {
		call = &exchangeCall{done: make(chan struct{})}
		s.inflight[key] = call
	}
	s.mu.Unlock()
	if !running {
		call.val, call.err = s.obtain(ctx, p, person)
		s.mu.Lock()
		delete(s.inflight, key)
		if call.err == nil {
			if len(s.cache) >= maxExchangeCache {
				for k, e := range s.cache {
					if !now.Before(e.expires) {
						delete(s.cache, k)
					}
				}
				if len(s.cache) >= maxExchangeCache {
					clear(s.cache)
				}
			}
			s.cache[key] = call.val
		}
		s.mu.Unlock()
		close(call.done)
	} else {
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if call.err != nil {
		return nil, call.err
	}
	return http.Header{"Authorization": {call.val.header}}, nil
}

// keyOf is p's place in the cache: by person (issuer and subject) for ID-JAG, person "" and by token otherwise.
func (s *TokenExchangeSource) keyOf(p *Principal) (person string, key [32]byte) {
	if s.perPerson && p.Subject != "" {
		person = p.Key()
		return person, sha256.Sum256([]byte("person\x00" + person))
	}
	return "", sha256.Sum256([]byte(p.token))
}

// obtain gets the token of p (person when keyed by person): from the shared store when the source has one and
// it holds a live token for person, else by fetch, whose success (never a refusal) it keeps there.
func (s *TokenExchangeSource) obtain(ctx context.Context, p *Principal, person string) (exchanged, error) {
	if s.shared == nil || person == "" {
		return s.fetch(ctx, p)
	}
	if e, ok := s.shared.get(ctx, person, s.now()); ok {
		if !p.Expiry.IsZero() && p.Expiry.Before(e.expires) {
			e.expires = p.Expiry
		}
		return e, nil
	}
	e, err := s.fetch(ctx, p)
	if err == nil {
		s.shared.put(ctx, person, e, s.now())
	}
	return e, err
}

func (s *TokenExchangeSource) exchange(ctx context.Context, p *Principal) (exchanged, error) {
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {p.token},
		"subject_token_type":   {tokenTypeAccess},
		"requested_token_type": {tokenTypeAccess},
	}
	if s.cfg.Audience != "" {
		form.Set("audience", s.cfg.Audience)
	}
	if s.cfg.Resource != "" {
		form.Set("resource", s.cfg.Resource)
	}
	if len(s.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(s.cfg.Scopes, " "))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return exchanged{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if s.cfg.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(s.cfg.ClientID), url.QueryEscape(s.cfg.ClientSecret))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return exchanged{}, fmt.Errorf("token exchange: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return exchanged{}, fmt.Errorf("token exchange: %w", err)
	}
	var out struct {
		AccessToken     string  `json:"access_token"`
		TokenType       string  `json:"token_type"`
		ExpiresIn       float64 `json:"expires_in"`
		IssuedTokenType string  `json:"issued_token_type"`
		Error           string  `json:"error"`
	}
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK {
		if out.Error != "" {
			return exchanged{}, fmt.Errorf("token exchange: %s: %s", resp.Status, sanitize(out.Error, 64))
		}
		return exchanged{}, fmt.Errorf("token exchange: %s", resp.Status)
	}
	if out.AccessToken == "" {
		return exchanged{}, errors.New("token exchange: no access_token in the answer")
	}
	typ := out.TokenType
	if typ == "" || strings.EqualFold(typ, "N_A") || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	now := s.now()
	ttl := defaultExchangedTTL
	if out.ExpiresIn > 0 {
		ttl = time.Duration(out.ExpiresIn) * time.Second
	}
	exp := now.Add(ttl)
	if ttl > 2*earlyRefresh {
		exp = exp.Add(-earlyRefresh)
	} else {
		exp = now.Add(ttl / 2)
	}
	if !p.Expiry.IsZero() && p.Expiry.Before(exp) {
		exp = p.Expiry
	}
	return exchanged{header: typ + " " + out.AccessToken, expires: exp}, nil
}

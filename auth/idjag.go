package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Enterprise-Managed Authorization (SEP-990): the person's identity assertion is exchanged at the company's
// identity provider for an Identity Assertion JWT Authorization Grant (ID-JAG, RFC 8693 token exchange), which the
// upstream's authorization server takes in a JWT bearer grant (RFC 7523) for an access token. No consent screen
// per person and upstream: the IdP decides who may reach what.

// IDJAGConfig configures an ID-JAG upstream credential.
type IDJAGConfig struct {
	// IdPTokenURL is the identity provider's token endpoint, where the exchange happens.
	IdPTokenURL string
	// IdPClientID and IdPClientSecret authenticate the gateway at the IdP (client_secret_basic); "" for none.
	IdPClientID, IdPClientSecret string
	// SubjectTokenType is what the caller's token is; "" means an ID token
	// (urn:ietf:params:oauth:token-type:id_token).
	SubjectTokenType string
	// Audience is the issuer of the upstream's authorization server: the ID-JAG is for it alone.
	Audience string
	// Resource is the upstream's MCP URL (RFC 8707), carried in the ID-JAG.
	Resource string
	// TokenURL is the upstream authorization server's token endpoint, where the ID-JAG is presented.
	TokenURL string
	// ClientID and ClientSecret are the gateway's client at that server (client_secret_basic).
	ClientID, ClientSecret string
	// Scopes are asked for at both steps; none leaves them to the servers.
	Scopes []string
	// SubjectTokenFile, when set, holds the ID token of the one person a gateway without sign-in serves (a
	// desktop gateway whose SSO helper keeps the file fresh): it is exchanged for requests that carry no
	// caller. It is read again, at most once a second, when it changes. "" = callers' own tokens only.
	SubjectTokenFile string
}

// idTokenFile is an ID-JAG source's identity for requests without a caller: the one person's ID token, read
// from a file, exchanged and cached as a caller's own token would be.
type idTokenFile struct {
	s    *TokenExchangeSource
	file *fileValue
}

func (f idTokenFile) Header(ctx context.Context, _ *Principal) (http.Header, error) {
	return f.s.Header(ctx, &Principal{token: f.file.get()})
}

// Identifiers of SEP-990 and RFC 7523.
const (
	tokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG   = "urn:ietf:params:oauth:token-type:id-jag"
	grantJWTBearer   = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// ErrIDJAGRefused is what a refusal by the identity provider or the authorization server is (errors.Is): the
// person may lack access to the upstream, or their assertion is no longer accepted.
var ErrIDJAGRefused = errors.New("auth: id-jag refused")

// NewIDJAGSource returns the source of an ID-JAG upstream: per person (issuer and subject; by token for the ID
// token file, which names no one), the exchange at the IdP then the JWT bearer grant, cached until shortly before
// the access token (or the caller's own) expires, and done again from the start after: the ID-JAG is short-lived
// and not kept. NewCredentialSource with Shared keeps the tokens sealed in a store every replica reads. The
// caller's assertion goes only to the IdP, the ID-JAG only to the authorization server. A request with no caller
// fails with ErrNoSubjectToken. client nil = a client with a 10s timeout.
func NewIDJAGSource(cfg IDJAGConfig, client *http.Client) *TokenExchangeSource {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	s := &TokenExchangeSource{client: client, now: time.Now, perPerson: true,
		cache: map[[32]byte]exchanged{}, inflight: map[[32]byte]*exchangeCall{}}
	s.fetch = func(ctx context.Context, p *Principal) (exchanged, error) { return idJAG(ctx, s, cfg, p) }
	return s
}

// idJAG runs the two steps for p.
func idJAG(ctx context.Context, s *TokenExchangeSource, cfg IDJAGConfig, p *Principal) (exchanged, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	subjectType := cfg.SubjectTokenType
	if subjectType == "" {
		subjectType = tokenTypeIDToken
	}
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {p.token},
		"subject_token_type":   {subjectType},
		"requested_token_type": {tokenTypeIDJAG},
		"audience":             {cfg.Audience},
		"resource":             {cfg.Resource},
	}
	if len(cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	jag, err := postToken(ctx, s.client, "the identity provider", cfg.IdPTokenURL, cfg.IdPClientID, cfg.IdPClientSecret, form)
	if err != nil {
		return exchanged{}, err
	}
	if jag.IssuedTokenType != "" && jag.IssuedTokenType != tokenTypeIDJAG {
		return exchanged{}, fmt.Errorf("auth: id-jag: the identity provider issued %s, not an ID-JAG", sanitize(jag.IssuedTokenType, 80))
	}
	form = url.Values{"grant_type": {grantJWTBearer}, "assertion": {jag.AccessToken}}
	if len(cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	tok, err := postToken(ctx, s.client, "the upstream's authorization server", cfg.TokenURL, cfg.ClientID, cfg.ClientSecret, form)
	if err != nil {
		return exchanged{}, err
	}
	typ := tok.TokenType
	if typ == "" || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	now := s.now()
	ttl := defaultExchangedTTL
	if tok.ExpiresIn > 0 {
		ttl = time.Duration(tok.ExpiresIn) * time.Second
	}
	exp := now.Add(ttl / 2)
	if ttl > 2*earlyRefresh {
		exp = now.Add(ttl - earlyRefresh)
	}
	if !p.Expiry.IsZero() && p.Expiry.Before(exp) {
		exp = p.Expiry
	}
	return exchanged{header: typ + " " + tok.AccessToken, expires: exp}, nil
}

// tokenAnswer is a token endpoint's answer (RFC 6749 §5.1, RFC 8693 §2.2.1).
type tokenAnswer struct {
	AccessToken     string  `json:"access_token"`
	TokenType       string  `json:"token_type"`
	ExpiresIn       float64 `json:"expires_in"`
	IssuedTokenType string  `json:"issued_token_type"`
	Error           string  `json:"error"`
}

// RefusedError is a token endpoint's refusal to grant: which kind of grant (errors.Is ErrIDJAGRefused or
// ErrWorkloadRefused), who refused, and the OAuth error code, the only part of the answer kept (never its
// description, nor anything sent).
type RefusedError struct {
	Kind  error
	Party string // who refused, as "the identity provider"
	Code  string // the OAuth error code, or the HTTP status; sanitized
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: %s refused (%s)", e.Kind, e.Party, e.Code)
}

// Unwrap is the kind of grant refused.
func (e *RefusedError) Unwrap() error { return e.Kind }

// PublicReason says why in words a client may read: the router shows it instead of "unavailable".
func (e *RefusedError) PublicReason() string {
	return fmt.Sprintf("%s refused to grant access for this person (%s)", e.Party, e.Code)
}

// postToken POSTs form to a token endpoint, with client_secret_basic when id is set. A refusal wraps
// ErrIDJAGRefused with the server's error code (never its description, nor anything sent).
func postToken(ctx context.Context, client *http.Client, who, endpoint, id, secret string, form url.Values) (tokenAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("auth: id-jag: %s: %w", who, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if id != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("auth: id-jag: reaching %s: %w", who, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("auth: id-jag: reading %s's answer: %w", who, err)
	}
	var out tokenAnswer
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK {
		code := sanitize(out.Error, 64)
		if code == "" {
			code = resp.Status
		}
		return tokenAnswer{}, &RefusedError{Kind: ErrIDJAGRefused, Party: who, Code: code}
	}
	if out.AccessToken == "" {
		return tokenAnswer{}, fmt.Errorf("auth: id-jag: %s answered without a token", who)
	}
	return out, nil
}

package browser

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Require serves next to signed-in browsers only. With a valid session
// cookie the user is in the request's context (UserFrom); otherwise the
// browser is sent to sign in and comes back to the same path and query.
func (s *SignIn) Require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		si, ok := s.signedIn(r)
		if !ok {
			s.Start(w, r, r.URL.RequestURI())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, si)))
	})
}

// Start sends the browser to the identity provider to sign in, to come back
// to returnTo afterwards. returnTo must be a path on this origin ("/x?y");
// anything else (another origin, "//host", a scheme) is replaced by "/", so
// a crafted link cannot make the gateway an open redirect. Pages use it for
// an explicit "sign in" or "switch account" link; Require calls it for them.
func (s *SignIn) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	st := loginState{
		State:    rand.Text(),
		Nonce:    rand.Text(),
		Verifier: oauth2.GenerateVerifier(),
		ReturnTo: safeReturnTo(returnTo),
		Exp:      s.now().Add(loginTTL).Unix(),
	}
	sealed, err := s.sealer.seal(purposeLogin, st)
	if err != nil {
		s.refuse(w, r, &refusal{http.StatusInternalServerError, msgInternal, err})
		return
	}
	http.SetCookie(w, s.cookie(s.loginCookie, s.callbackPath, sealed, loginTTL))
	noStore(w)
	http.Redirect(w, r, s.oauth.AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

// maxReturnTo bounds the return-to path kept in the login cookie.
const maxReturnTo = 1024

// safeReturnTo returns p if it is a path on this origin, else "/". The
// fragment is dropped: browsers never send it, so it is not ours.
func safeReturnTo(p string) string {
	if len(p) > maxReturnTo || !strings.HasPrefix(p, "/") {
		return "/"
	}
	// "//host" and "/\host" are network-path references to browsers, which
	// read a backslash as a slash; control characters are stripped by them,
	// so "/\t/host" is "//host" too.
	if strings.HasPrefix(p, "//") || strings.ContainsRune(p, '\\') {
		return "/"
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return "/"
		}
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// signedIn reads the session from the context (inside Require), else from
// the cookie.
func (s *SignIn) signedIn(r *http.Request) (signedIn, bool) {
	if si, ok := r.Context().Value(userKey{}).(signedIn); ok {
		return si, true
	}
	c, err := r.Cookie(s.cfg.CookieName)
	if err != nil {
		return signedIn{}, false
	}
	var sess session
	if err := s.sealer.open(purposeSession, c.Value, &sess); err != nil {
		return signedIn{}, false
	}
	if sess.ID == "" || sess.Sub == "" || sess.Iss != s.cfg.Issuer || !s.now().Before(time.Unix(sess.Exp, 0)) {
		return signedIn{}, false
	}
	return signedIn{user: User{Issuer: sess.Iss, Subject: sess.Sub, Name: sess.Name, Email: sess.Email}, sid: sess.ID}, true
}

// Callback serves the RedirectURL's path (CallbackPath): it completes the
// sign-in and sends the browser back where it was going. A bad, expired or
// reused state is a 400, a refusal at the identity provider a 403, and an
// identity provider that fails or answers with something unverifiable a
// 502; each is a short page that names no code or token.
func (s *SignIn) Callback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The URL carries the code: keep it out of any Referer.
		w.Header().Set("Referrer-Policy", "no-referrer")
		noStore(w)
		// GET only: a HEAD from a link checker must not spend the state.
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			s.refuse(w, r, &refusal{http.StatusMethodNotAllowed, "The sign-in callback is opened by the identity provider's redirect.", errors.New("method " + r.Method)})
			return
		}
		st, err := s.takeLoginState(w, r)
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		sess, err := s.complete(r.Context(), st, r.URL.Query())
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		sealed, err := s.sealer.seal(purposeSession, sess)
		if err != nil {
			s.refuse(w, r, &refusal{http.StatusInternalServerError, msgInternal, err})
			return
		}
		http.SetCookie(w, s.cookie(s.cfg.CookieName, "/", sealed, s.cfg.SessionTTL))
		s.log.Info("browser: signed in", "user", User{Issuer: sess.Iss, Subject: sess.Sub})
		http.Redirect(w, r, st.ReturnTo, http.StatusFound)
	})
}

// takeLoginState reads the login-state cookie, clears it whatever follows
// (it is single-use), and checks it against the callback's state.
func (s *SignIn) takeLoginState(w http.ResponseWriter, r *http.Request) (loginState, error) {
	http.SetCookie(w, s.cookie(s.loginCookie, s.callbackPath, "", -1))
	var st loginState
	c, err := r.Cookie(s.loginCookie)
	if err != nil {
		return st, badState("no login-state cookie")
	}
	if err := s.sealer.open(purposeLogin, c.Value, &st); err != nil {
		return st, badState("login-state cookie: %v", err)
	}
	now := s.now()
	exp := time.Unix(st.Exp, 0)
	if !now.Before(exp) {
		return st, badState("login state expired %s ago", now.Sub(exp).Round(time.Second))
	}
	if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("state")), []byte(st.State)) != 1 {
		return st, badState("state does not match the login-state cookie")
	}
	if !s.spent.spend(st.State, now, exp) {
		return st, badState("login state already used")
	}
	return st, nil
}

// complete turns the identity provider's answer into a session: the code
// exchanged with the PKCE verifier, the ID token verified by go-oidc, its
// nonce compared with the login state's.
func (s *SignIn) complete(ctx context.Context, st loginState, q url.Values) (session, error) {
	if e := q.Get("error"); e != "" {
		if e == "access_denied" {
			return session{}, &refusal{http.StatusForbidden, "Sign-in was cancelled or refused at the identity provider.", errors.New("access_denied")}
		}
		return session{}, idpFailed("authorization error %.64q", e)
	}
	code := q.Get("code")
	if code == "" {
		return session{}, badState("no code in the callback")
	}
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, s.client)
	tok, err := s.oauth.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return session{}, exchangeFailed(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return session{}, idpFailed("the token response has no id_token")
	}
	idt, err := s.verifier.Verify(ctx, raw)
	if err != nil {
		return session{}, idpFailed("id token refused: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(st.Nonce)) != 1 {
		return session{}, idpFailed("id token nonce does not match the login state")
	}
	if idt.Subject == "" {
		return session{}, idpFailed("id token has no sub")
	}
	var c struct {
		Name              string `json:"name"`
		PreferredUsername string `json:"preferred_username"`
		Email             string `json:"email"`
	}
	if err := idt.Claims(&c); err != nil {
		return session{}, idpFailed("id token claims: %w", err)
	}
	if c.Name == "" {
		c.Name = c.PreferredUsername
	}
	return session{
		ID:    rand.Text(),
		Iss:   idt.Issuer,
		Sub:   idt.Subject,
		Name:  c.Name,
		Email: c.Email,
		Exp:   s.now().Add(s.cfg.SessionTTL).Unix(),
	}, nil
}

// exchangeFailed classifies a failed code exchange. invalid_grant is the
// code (used, expired, or not issued for this verifier): the person starts
// again. Anything else is the identity provider failing. Only the status
// and error code are kept: the response body is the provider's to word.
func exchangeFailed(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return idpFailed("token exchange: %w", err)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	if re.ErrorCode == "invalid_grant" {
		return &refusal{http.StatusBadRequest, msgBadState, fmt.Errorf("token endpoint: %d invalid_grant", status)}
	}
	return idpFailed("token endpoint: %d %.64q", status, re.ErrorCode)
}

// cookie builds one of the two cookies; maxAge < 0 clears it.
func (s *SignIn) cookie(name, path, value string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     path,
		MaxAge:   int(maxAge / time.Second),
		HttpOnly: true,
		Secure:   s.cfg.Secure,
		SameSite: http.SameSiteLaxMode,
	}
	if maxAge < 0 {
		c.MaxAge = -1
	}
	return c
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}

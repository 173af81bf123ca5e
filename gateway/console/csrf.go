package console

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"net/http"
)

// CSRFField is the form field that carries the anti-forgery token: the same
// as auth/browser's, so its tokens work unchanged.
const CSRFField = "csrf_token"

// csrfCookie holds the console's own token when the caller gives no CSRF.
const csrfCookie = "switchboard_console_csrf"

// cookieCSRF is the console's own CSRF protection, for a gateway without a
// browser session (loopback-only, no auth): a random token in a cookie that
// only the console's path gets and that no other site's request carries
// (SameSite=Strict), repeated in every form and compared in constant time,
// and a cross-origin check (Sec-Fetch-Site, Origin) of every POST. The token
// lives in the browser, so every replica checks it alike.
type cookieCSRF struct {
	name, path string
	secure     bool
	cop        http.CrossOriginProtection
}

var _ CSRF = (*cookieCSRF)(nil)

// Token is r's cookie's token, "" without a well-formed one.
func (k *cookieCSRF) Token(r *http.Request) string {
	ck, err := r.Cookie(k.name)
	if err != nil {
		return ""
	}
	if b, err := base64.RawURLEncoding.DecodeString(ck.Value); err != nil || len(b) != 32 {
		return ""
	}
	return ck.Value
}

// ensure gives r's token, setting a new cookie when r has none.
func (k *cookieCSRF) ensure(w http.ResponseWriter, r *http.Request) string {
	if t := k.Token(r); t != "" {
		return t
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	t := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name:     k.name,
		Value:    t,
		Path:     k.path,
		HttpOnly: true,
		Secure:   k.secure || r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	return t
}

// Check reports whether r comes from this origin and carries its cookie's
// token in the form.
func (k *cookieCSRF) Check(r *http.Request) bool {
	if k.cop.Check(r) != nil {
		return false
	}
	want := k.Token(r)
	if want == "" {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue(CSRFField)), []byte(want))
}

// csrfToken is the token for r's forms.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if k, ok := c.csrf.(*cookieCSRF); ok {
		return k.ensure(w, r)
	}
	return c.csrf.Token(r)
}

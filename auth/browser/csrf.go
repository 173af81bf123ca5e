package browser

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// CSRFField is the form field CheckCSRF reads; pages put CSRFToken in a
// hidden input of that name. Scripts may send the X-CSRF-Token header
// instead.
const CSRFField = "csrf_token"

const csrfHeader = "X-CSRF-Token"

// CSRFToken is the anti-forgery token of r's session ("" without one). It
// is an HMAC of the session id, so it needs no storage, is the same on
// every replica, and changes with each sign-in.
func (s *SignIn) CSRFToken(r *http.Request) string {
	si, ok := s.signedIn(r)
	if !ok {
		return ""
	}
	return s.csrfFor(si.sid)
}

func (s *SignIn) csrfFor(sid string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF reports whether a state-changing request comes from the
// gateway's own page: it must not be cross-origin (Sec-Fetch-Site, Origin;
// the RedirectURL's origin is trusted), and it must carry r's session's
// token in the CSRFField form field (the body, never the query) or the
// X-CSRF-Token header. The comparison is constant-time.
func (s *SignIn) CheckCSRF(r *http.Request) bool {
	if s.cop.Check(r) != nil {
		return false
	}
	want := s.CSRFToken(r)
	if want == "" {
		return false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(CSRFField)
	}
	return hmac.Equal([]byte(got), []byte(want))
}

// SignOut clears the session cookie (POST with a valid CSRF token only, so
// another site cannot sign a person out) and says so. The identity
// provider's own session is left alone: the next protected page signs in
// again, silently if the provider still knows the browser.
func (s *SignIn) SignOut() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.render(w, http.StatusMethodNotAllowed, "Method not allowed", "Sign out with the button on the page.")
			return
		}
		if !s.CheckCSRF(r) {
			s.render(w, http.StatusForbidden, "Sign-out refused", "The sign-out request could not be verified. Reload the page and try again.")
			return
		}
		http.SetCookie(w, s.cookie(s.cfg.CookieName, "/", "", -1))
		if si, ok := s.signedIn(r); ok {
			s.log.Info("browser: signed out", "user", si.user)
		}
		s.render(w, http.StatusOK, "Signed out", "You are signed out of the gateway.")
	})
}

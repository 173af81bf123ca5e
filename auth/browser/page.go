package browser

import (
	"errors"
	"fmt"
	"net/http"
)

// What a person is told. Fixed sentences: nothing from the request or the
// identity provider is echoed.
const (
	msgBadState = "This sign-in has expired or was already used. Go back to the page you were opening and try again."
	msgIdP      = "The identity provider could not complete the sign-in. Try again in a moment; if it keeps failing, tell the gateway's operator."
	msgInternal = "The gateway could not start the sign-in. Tell the gateway's operator."
)

// refusal is a sign-in that did not complete: what the person sees and the
// status, and the reason for the log. The reason never holds a code, a
// verifier, a token or a cookie value.
type refusal struct {
	status int
	public string
	reason error
}

// Error gives the status and the reason, for logs and tests.
func (e *refusal) Error() string {
	return fmt.Sprintf("browser: sign-in refused (%d): %v", e.status, e.reason)
}

// Unwrap gives the reason.
func (e *refusal) Unwrap() error { return e.reason }

func badState(format string, args ...any) error {
	return &refusal{http.StatusBadRequest, msgBadState, fmt.Errorf(format, args...)}
}

func idpFailed(format string, args ...any) error {
	return &refusal{http.StatusBadGateway, msgIdP, fmt.Errorf(format, args...)}
}

// refuse logs err and answers with its page.
func (s *SignIn) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var rf *refusal
	if !errors.As(err, &rf) {
		rf = &refusal{http.StatusInternalServerError, msgInternal, err}
	}
	s.log.Warn("browser: sign-in refused", "path", r.URL.Path, "status", rf.status, "reason", rf.reason.Error())
	title := "Sign-in failed"
	if rf.status == http.StatusMethodNotAllowed {
		title = "Method not allowed"
	}
	s.render(w, rf.status, title, rf.public)
}

// render writes a small self-contained page.
func (s *SignIn) render(w http.ResponseWriter, status int, title, message string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	noStore(w)
	w.WriteHeader(status)
	// A failed write is the browser gone; there is no one left to tell.
	_ = s.page.Execute(w, struct{ Title, Message string }{title, message})
}

const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Switchboard</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa;margin:0}
main{max-width:34rem;margin:4rem auto;padding:1.5rem 2rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}
h1{font-size:1.3rem;margin:0 0 .5rem}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
</main>
</body>
</html>
`

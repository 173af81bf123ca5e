// Package console serves /console: the gateway's admin console in the
// browser. Its pages show the upstreams' health and recent metrics, each
// endpoint's catalog (and what its search gives a model), the definitions
// that drifted from their pins side by side with their invisible characters
// shown, who is connected to each per-user upstream, the audit log and its
// chain, and the running configuration with the last reload's problems. Its
// buttons approve pins, revoke grants and reload the configuration.
//
// The pages are rendered on the server with html/template, need no script
// and work with the keyboard alone: every action is a <button> in a POST
// <form> that redirects back (post, redirect, get), every filter a GET form.
// The stylesheet is served beside them, so the Content-Security-Policy
// forbids every script and inline style.
//
// Console is a self-contained http.Handler that keeps no state: it reads
// everything from a Source (the gateway's adapter over its router and
// store), so any replica serves any page. It does not sign anyone in: the
// caller decides who is an admin (Options.Admin) and, if it has a browser
// session, supplies its CSRF tokens (Options.CSRF); without one the console
// uses a token of its own, in a SameSite=Strict cookie.
//
// Routes, under BasePath (default "/console"):
//
//	GET  BasePath                        overview (HEAD too, as every GET)
//	GET  BasePath/catalog?endpoint=&q=   an endpoint's catalog, and its search for q
//	GET  BasePath/pins                   changed definitions, pinned and seen side by side
//	GET  BasePath/people                 who is connected to each user-oauth upstream
//	GET  BasePath/audit?person=&tool=&outcome=&endpoint=   the latest audit events, the chain's state
//	GET  BasePath/config                 the running configuration, redacted; the last reload
//	GET  BasePath/style.css              the stylesheet (its URL carries its hash)
//	POST BasePath/pins/approve           upstream, kind, name, seen
//	POST BasePath/pins/approve-all
//	POST BasePath/people/revoke          upstream, subject
//	POST BasePath/people/revoke-all      upstream
//	POST BasePath/config/reload
//
// Every POST carries the CSRF token in the form field "csrf_token" and
// answers 303 to the page it came from with ?flash=KEY.
//
// The handler sees the full path: mount it at BasePath and BasePath+"/"
// without http.StripPrefix.
package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/gateway/pageshell"
)

// Errors a Source returns that the console tells apart.
var (
	// ErrNotFound: the endpoint, definition, upstream or person named does
	// not exist (or no longer drifts, or is no longer connected).
	ErrNotFound = errors.New("console: not found")
	// ErrStale: the definition changed again since the page showed it; the
	// admin must review the new one.
	ErrStale = errors.New("console: changed since shown")
)

// CSRF protects the console's forms with a browser session's tokens (auth/
// browser's SignIn gives CSRFToken and CheckCSRF, field "csrf_token").
type CSRF interface {
	// Token is r's session's anti-forgery token, put in every form.
	Token(r *http.Request) string
	// Check reports whether a state-changing request carries r's session's
	// token and comes from the gateway's own pages.
	Check(r *http.Request) bool
}

// Options configures a Console.
type Options struct {
	// Source gives the pages their data and performs the actions. Required.
	Source Source
	// Admin decides who may use the console: subject is the admin's name
	// for the pages and the actions' "by"; ok false refuses r (403). For a
	// gateway with browser sign-in, the signed-in subjects listed in
	// auth.browser.admins; for a loopback-only gateway without auth,
	// everyone. Required.
	Admin func(r *http.Request) (subject string, ok bool)
	// CSRF makes and checks the forms' tokens with a browser session's;
	// nil means the console's own (a random token in a SameSite=Strict
	// cookie, checked against the form's in constant time, and a
	// cross-origin check of the request).
	CSRF CSRF
	// BasePath is where the console is mounted, "/console" when empty. It
	// starts with "/" and does not end with one.
	BasePath string
	// SecureCookie marks the console's own CSRF cookie Secure even on a
	// plain-HTTP request (a gateway behind a TLS-terminating proxy). A
	// request over TLS always gets a Secure cookie.
	SecureCookie bool
	// Logger receives the actions and failures. nil means slog.Default().
	Logger *slog.Logger
}

// Console serves the admin console. It is safe for concurrent use.
type Console struct {
	src    Source
	admin  func(*http.Request) (string, bool)
	csrf   CSRF
	log    *slog.Logger
	pages  map[string]*template.Template
	errTpl *template.Template

	base     string
	styleURL string
	style    *pageshell.Stylesheet

	// now is the clock for "ago"; tests replace it.
	now func() time.Time
}

var _ http.Handler = (*Console)(nil)

//go:embed templates/*.html static/style.css
var files embed.FS

// Headers of every HTML answer: the one stylesheet, forms to this origin,
// nothing else. Pages hold a CSRF token and people's names, so nothing
// caches them and no referrer leaks their URL.
const (
	contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	maxFormBytes          = 16 << 10
)

// pageNames are the console's pages: each is templates/NAME.html with
// templates/layout.html.
var pageNames = []string{"overview", "catalog", "pins", "people", "audit", "config"}

// New checks opts and parses the templates.
func New(opts Options) (*Console, error) {
	if opts.Source == nil {
		return nil, errors.New("console: Options.Source is required")
	}
	if opts.Admin == nil {
		return nil, errors.New("console: Options.Admin is required")
	}
	base, err := pageshell.BasePath(opts.BasePath, "/console")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &Console{
		src:   opts.Source,
		admin: opts.Admin,
		csrf:  opts.CSRF,
		log:   opts.Logger,
		pages: map[string]*template.Template{},
		base:  base,
		now:   time.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.csrf == nil {
		c.csrf = &cookieCSRF{name: csrfCookie, path: base, secure: opts.SecureCookie}
	}
	funcs := c.funcs()
	for _, name := range append(pageNames, "error") {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parsing the %s page: %w", name, err)
		}
		c.pages[name] = t
	}
	c.errTpl = c.pages["error"]
	style, err := files.ReadFile("static/style.css")
	if err != nil {
		return nil, fmt.Errorf("console: reading the stylesheet: %w", err)
	}
	c.style = pageshell.NewStylesheet(style)
	c.styleURL = c.style.URL(base)
	return c, nil
}

// ServeHTTP serves the pages, the stylesheet and the actions.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == c.base+"/style.css" {
		if allow(w, r, http.MethodGet, http.MethodHead) {
			c.style.ServeHTTP(w, r)
		} else {
			c.methodNotAllowed(w, r)
		}
		return
	}
	page, action, ok := c.route(path)
	if !ok {
		c.renderError(w, r, http.StatusNotFound, "Not found", "There is no console page here.")
		return
	}
	subject, ok := c.admin(r)
	if !ok {
		c.log.Warn("console: refused a request that is not an admin's", "path", r.URL.Path)
		c.renderError(w, r, http.StatusForbidden, "Admins only", "The console is for the gateway's admins. Sign in as one (auth.browser.admins lists them), or ask one to look for you.")
		return
	}
	if action != nil {
		if !allow(w, r, http.MethodPost) {
			c.methodNotAllowed(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			c.renderError(w, r, http.StatusBadRequest, "Bad request", "The form could not be read. Go back to the console and try again.")
			return
		}
		if !c.csrf.Check(r) {
			c.log.Warn("console: action refused: CSRF check failed", "by", subject, "path", r.URL.Path)
			c.renderError(w, r, http.StatusForbidden, "Request refused", "The request could not be verified as coming from the console. Reload the page and try again.")
			return
		}
		action(w, r, subject)
		return
	}
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		c.methodNotAllowed(w, r)
		return
	}
	page(w, r, c.shell(w, r, subject))
}

type (
	pageFunc   func(http.ResponseWriter, *http.Request, shell)
	actionFunc func(http.ResponseWriter, *http.Request, string)
)

// route finds path's page or action.
func (c *Console) route(path string) (pageFunc, actionFunc, bool) {
	rel, ok := strings.CutPrefix(path, c.base)
	if !ok {
		return nil, nil, false
	}
	switch rel {
	case "":
		return c.overviewPage, nil, true
	case "/catalog":
		return c.catalogPage, nil, true
	case "/pins":
		return c.pinsPage, nil, true
	case "/people":
		return c.peoplePage, nil, true
	case "/audit":
		return c.auditPage, nil, true
	case "/config":
		return c.configPage, nil, true
	case "/pins/approve":
		return nil, c.approve, true
	case "/pins/approve-all":
		return nil, c.approveAll, true
	case "/people/revoke":
		return nil, c.revoke, true
	case "/people/revoke-all":
		return nil, c.revokeAll, true
	case "/config/reload":
		return nil, c.reload, true
	}
	return nil, nil, false
}

// allow reports whether r's method is one of methods, and sets Allow when it
// is not.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	return false
}

func (c *Console) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	c.renderError(w, r, http.StatusMethodNotAllowed, "Method not allowed", "Use the console's links and buttons.")
}

// redirect ends an action: 303, so the browser follows with a GET and a
// reload does not post again. page is relative to BasePath ("" for the
// overview), key a flash key and n its count.
func (c *Console) redirect(w http.ResponseWriter, r *http.Request, page, key string, n int) {
	u := c.base + page + "?" + paramFlash + "=" + key
	if n > 0 {
		u += fmt.Sprintf("&%s=%d", paramCount, n)
	}
	noStore(w)
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// errorView is what error.html renders.
type errorView struct {
	shell
	Status  int
	Message string
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	v := errorView{shell: shell{Title: title, StyleURL: c.styleURL, Base: c.base}, Status: status, Message: message}
	c.render(w, r, status, c.errTpl, v)
}

// failed shows a Source's failure: logged whole, told briefly.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.log.Error("console: "+what+" failed", "path", r.URL.Path, "err", err)
	c.renderError(w, r, http.StatusInternalServerError, "Unavailable", "The gateway could not "+what+". Try again in a moment; the gateway's log says more.")
}

// page renders the named page with view.
func (c *Console) page(w http.ResponseWriter, r *http.Request, name string, view any) {
	c.render(w, r, http.StatusOK, c.pages[name], view)
}

// render executes the template into a buffer first, so a template error
// becomes a 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, t *template.Template, data any) {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout.html", data); err != nil {
		c.log.Error("console: rendering failed", "path", r.URL.Path, "err", err)
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString("<!doctype html><html lang=\"en\"><title>Error</title><p>The page could not be rendered.</p></html>")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	noStore(w)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	// A failed write is the browser gone; there is no one left to tell.
	_, _ = w.Write(b.Bytes())
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}

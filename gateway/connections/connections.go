// Package connections serves /connections: the page where a signed-in person
// sees each upstream that acts with their own OAuth grant (user-oauth),
// connects it and disconnects it, and where an admin also sees a small status
// view of the gateway (the upstreams' health and the catalog's size).
//
// The page is rendered on the server with html/template, needs no script, and
// works with the keyboard alone: every action is a real link or a real
// <button> in a <form>. Its stylesheet is served beside it (BasePath +
// "/style.css"), so the Content-Security-Policy can forbid inline styles and
// every script.
//
// Page is a self-contained http.Handler. It does not sign anyone in: the
// gateway wraps it with the browser sign-in (auth/browser's SignIn.Require)
// and gives it the signed-in user (Options.User), the CSRF protection
// (Options.CSRF, the tokens of that sign-in's session) and the admin policy
// (Options.IsAdmin). The checks here are defence in depth: a request without
// a user gets a 401 page, a form without a valid token a 403.
//
// Routes, under BasePath (default "/connections"):
//
//	GET  BasePath              the page (HEAD too); ?flash=KEY shows one of a fixed set of messages
//	GET  BasePath/style.css    the stylesheet, cached for a year (its URL carries its hash)
//	POST BasePath/disconnect   form fields "upstream" and browser.CSRFField; 303 back to the page
//
// The handler sees the full path: mount it at BasePath and BasePath+"/"
// without http.StripPrefix.
package connections

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/browser"
	"github.com/switchboard-mcp/switchboard/gateway/pageshell"
)

// Connection is one user-oauth upstream as one person sees it.
type Connection struct {
	// Upstream is the upstream's configured name: the key Disconnect takes.
	Upstream string
	// Title is the name shown to people; empty means Upstream.
	Title string
	// Connected reports whether the gateway holds a grant of this person's
	// for the upstream.
	Connected bool
	// Scopes are the grant's scopes when connected, else the ones a connect
	// would ask for.
	Scopes []string
	// Expires is when the grant's access token expires; zero when unknown or
	// not connected.
	Expires time.Time
	// ConnectURL is where the connect button goes (a GET): the gateway's
	// connect flow for this person and upstream. Empty means the page offers
	// no connect button.
	ConnectURL string
}

// Grants is the store of per-user upstream grants, as the page needs it.
type Grants interface {
	// Connections lists the user-oauth upstreams for user (a principal key,
	// issuer "|" subject), in the order the page shows them.
	Connections(ctx context.Context, user string) ([]Connection, error)
	// Disconnect revokes and forgets user's grant for upstream. Disconnecting
	// an upstream that is not connected is not an error.
	Disconnect(ctx context.Context, user, upstream string) error
}

// UpstreamHealth is one upstream in the admin's status view.
type UpstreamHealth struct {
	// Name is the upstream's configured name.
	Name string
	// State is the upstream's state as the router names it: connecting,
	// ready, down or closed.
	State string
	// Tools is how many tools the upstream gives the catalog.
	Tools int
	// Error is the upstream's last error, shown to admins. It must hold no
	// secret: the page shows it as it is (cut to a few hundred characters).
	Error string
}

// Status is the gateway's state, for the admin's status view.
type Status interface {
	// Upstreams lists every upstream and its health.
	Upstreams(ctx context.Context) []UpstreamHealth
	// CatalogCount is the number of tools in the catalog.
	CatalogCount(ctx context.Context) int
}

// CSRF protects the page's forms. auth/browser's SignIn provides it with
// CSRFToken and CheckCSRF; the token goes in the form field
// browser.CSRFField, which is where CheckCSRF reads it.
type CSRF interface {
	// Token is r's session's anti-forgery token, put in every form.
	Token(r *http.Request) string
	// Check reports whether a state-changing request carries r's session's
	// token and comes from the gateway's own page.
	Check(r *http.Request) bool
}

// Options configures a Page.
type Options struct {
	// Grants lists and disconnects the signed-in person's grants. Required.
	Grants Grants
	// Status feeds the admin's status view; nil means no status view.
	Status Status
	// CSRF makes and checks the forms' tokens. Required.
	CSRF CSRF
	// User gives the signed-in person: id is the principal key Grants takes,
	// display the name shown on the page (empty means id); ok is false when
	// no one is signed in. Required. With auth/browser:
	// browser.UserFrom(r.Context()) gives User.Key() and User.Name.
	User func(r *http.Request) (id, display string, ok bool)
	// IsAdmin reports whether r's person may see the status view, as the
	// gateway's policy says; nil means no one.
	IsAdmin func(r *http.Request) bool
	// BasePath is the page's path, "/connections" when empty. It starts with
	// "/" and does not end with one.
	BasePath string
	// Logger receives disconnects and failures, never a token. nil means
	// slog.Default().
	Logger *slog.Logger
}

// Page serves the connections page. It is safe for concurrent use.
type Page struct {
	grants  Grants
	status  Status
	csrf    CSRF
	user    func(*http.Request) (string, string, bool)
	isAdmin func(*http.Request) bool
	log     *slog.Logger
	tmpl    *template.Template

	base       string // BasePath
	styleURL   string // BasePath/style.css?v=hash: a new URL whenever the CSS changes, so it can be cached for long
	style      *pageshell.Stylesheet
	disconnect string // BasePath/disconnect

	// now is the clock for "expires in"; tests replace it.
	now func() time.Time
}

var _ http.Handler = (*Page)(nil)

//go:embed templates/*.html static/style.css
var files embed.FS

// Headers of every HTML answer. The CSP allows the one stylesheet and forms
// posting to this origin, and nothing else: no script, no inline style, no
// frame. Pages hold a CSRF token and a person's connections, so nothing
// caches them and no referrer leaks their URL.
const (
	contentSecurityPolicy = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// Limits: a disconnect form is two short fields; an upstream's error is shown
// in a side panel, not a log viewer.
const (
	maxFormBytes  = 16 << 10
	maxErrorRunes = 300
)

// The form field naming the upstream to disconnect, and the query parameter
// carrying the flash key after a redirect.
const (
	fieldUpstream = "upstream"
	paramFlash    = "flash"
)

// Flash keys: the query names a key, never a message, so a crafted link
// cannot make the page say anything of its choosing.
const (
	flashDisconnected     = "disconnected"
	flashDisconnectFailed = "disconnect-failed"
)

// flash is a message shown once at the top of the page.
type flash struct {
	Kind string // "ok" or "error": the CSS class
	Text string
}

// flashFor gives the message of a flash key; ok is false for any other
// string.
func flashFor(key string) (f flash, ok bool) {
	switch key {
	case flashDisconnected:
		return flash{"ok", "Disconnected. The gateway no longer holds your grant for that upstream; connect again whenever you need it."}, true
	case flashDisconnectFailed:
		return flash{"error", "The disconnect did not complete. Try again; if it keeps failing, tell the gateway's operator."}, true
	}
	return flash{}, false
}

// head is the shell's head of a page titled title.
func head(title string) pageshell.Head {
	return pageshell.Head{Title: title, Meta: []pageshell.Meta{{Name: "color-scheme", Content: "light"}}}
}

// New checks opts and parses the page's templates.
func New(opts Options) (*Page, error) {
	if opts.Grants == nil {
		return nil, errors.New("connections: Options.Grants is required")
	}
	if opts.CSRF == nil {
		return nil, errors.New("connections: Options.CSRF is required")
	}
	if opts.User == nil {
		return nil, errors.New("connections: Options.User is required")
	}
	base, err := pageshell.BasePath(opts.BasePath, "/connections")
	if err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	tmpl, err := pageshell.New("connections", template.FuncMap{"head": head}).ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("connections: parsing the templates: %w", err)
	}
	style, err := files.ReadFile("static/style.css")
	if err != nil {
		return nil, fmt.Errorf("connections: reading the stylesheet: %w", err)
	}
	sheet := pageshell.NewStylesheet(style)
	p := &Page{
		grants:     opts.Grants,
		status:     opts.Status,
		csrf:       opts.CSRF,
		user:       opts.User,
		isAdmin:    opts.IsAdmin,
		log:        opts.Logger,
		tmpl:       tmpl,
		base:       base,
		styleURL:   sheet.URL(base),
		style:      sheet,
		disconnect: base + "/disconnect",
		now:        time.Now,
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.isAdmin == nil {
		p.isAdmin = func(*http.Request) bool { return false }
	}
	return p, nil
}

// ServeHTTP serves the page, its stylesheet and the disconnect form's POST.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case p.base, p.base + "/":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			p.methodNotAllowed(w, r)
			return
		}
		p.servePage(w, r)
	case p.base + "/style.css":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			p.methodNotAllowed(w, r)
			return
		}
		p.style.ServeHTTP(w, r)
	case p.disconnect:
		if !allow(w, r, http.MethodPost) {
			p.methodNotAllowed(w, r)
			return
		}
		p.serveDisconnect(w, r)
	default:
		p.renderError(w, r, http.StatusNotFound, "Not found", "There is no page here.")
	}
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

func (p *Page) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	p.renderError(w, r, http.StatusMethodNotAllowed, "Method not allowed", "Use the buttons on the connections page.")
}

// pageView is what page.html renders.
type pageView struct {
	StyleURL, Home string
	User           string
	Flash          *flash
	CSRFField      string
	CSRFToken      string
	DisconnectURL  string
	Connections    []connectionView
	Admin          bool
	Upstreams      []healthView
	Catalog        int
}

type connectionView struct {
	Connection
	// ExpiresISO is the datetime attribute, ExpiresText the time people read,
	// ExpiresIn how far away it is ("in 42 minutes", "expired").
	ExpiresISO, ExpiresText, ExpiresIn string
	Expired                            bool
}

type healthView struct {
	UpstreamHealth
	Class string // the badge's CSS class
}

func (p *Page) servePage(w http.ResponseWriter, r *http.Request) {
	id, display, ok := p.user(r)
	if !ok {
		p.notSignedIn(w, r)
		return
	}
	conns, err := p.grants.Connections(r.Context(), id)
	if err != nil {
		p.log.Error("connections: listing the grants failed", "user", id, "err", err)
		p.renderError(w, r, http.StatusInternalServerError, "Connections unavailable", "The gateway could not read your connections. Try again in a moment; if it keeps failing, tell the gateway's operator.")
		return
	}
	if display == "" {
		display = id
	}
	v := pageView{
		StyleURL:      p.styleURL,
		Home:          p.base,
		User:          display,
		CSRFField:     browser.CSRFField,
		CSRFToken:     p.csrf.Token(r),
		DisconnectURL: p.disconnect,
		Connections:   p.connectionViews(conns),
	}
	if f, ok := flashFor(r.URL.Query().Get(paramFlash)); ok {
		v.Flash = &f
	}
	if p.status != nil && p.isAdmin(r) {
		v.Admin = true
		v.Upstreams = healthViews(p.status.Upstreams(r.Context()))
		v.Catalog = p.status.CatalogCount(r.Context())
	}
	p.render(w, r, http.StatusOK, "page.html", v)
}

func (p *Page) connectionViews(conns []Connection) []connectionView {
	now := p.now()
	out := make([]connectionView, 0, len(conns))
	for _, c := range conns {
		cv := connectionView{Connection: c}
		if cv.Title == "" {
			cv.Title = c.Upstream
		}
		if c.Connected && !c.Expires.IsZero() {
			exp := c.Expires.UTC()
			cv.ExpiresISO = exp.Format(time.RFC3339)
			cv.ExpiresText = exp.Format("2 Jan 2006, 15:04 UTC")
			cv.ExpiresIn, cv.Expired = until(exp.Sub(now))
		}
		out = append(out, cv)
	}
	return out
}

// until says how far away an expiry d from now is, in words, rounded down.
func until(d time.Duration) (words string, expired bool) {
	switch {
	case d <= 0:
		return "expired", true
	case d < time.Minute:
		return "in less than a minute", false
	case d < time.Hour:
		return "in " + plural(int(d/time.Minute), "minute"), false
	case d < 48*time.Hour:
		return "in " + plural(int(d/time.Hour), "hour"), false
	default:
		return "in " + plural(int(d/(24*time.Hour)), "day"), false
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func healthViews(ups []UpstreamHealth) []healthView {
	out := make([]healthView, 0, len(ups))
	for _, u := range ups {
		if r := []rune(u.Error); len(r) > maxErrorRunes {
			u.Error = string(r[:maxErrorRunes]) + "…"
		}
		hv := healthView{UpstreamHealth: u, Class: "neutral"}
		switch {
		case u.Error != "" || u.State == "down":
			hv.Class = "bad"
		case u.State == "ready":
			hv.Class = "ok"
		case u.State == "connecting":
			hv.Class = "pending"
		}
		out = append(out, hv)
	}
	return out
}

func (p *Page) serveDisconnect(w http.ResponseWriter, r *http.Request) {
	id, _, ok := p.user(r)
	if !ok {
		p.notSignedIn(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		p.renderError(w, r, http.StatusBadRequest, "Bad request", "The form could not be read. Go back to the connections page and try again.")
		return
	}
	if !p.csrf.Check(r) {
		p.log.Warn("connections: disconnect refused: CSRF check failed", "user", id)
		p.renderError(w, r, http.StatusForbidden, "Request refused", "The request could not be verified as coming from this page. Reload the connections page and try again.")
		return
	}
	name := r.PostFormValue(fieldUpstream)
	if name == "" {
		p.renderError(w, r, http.StatusBadRequest, "Bad request", "The form did not say which upstream to disconnect.")
		return
	}
	conns, err := p.grants.Connections(r.Context(), id)
	if err != nil {
		p.log.Error("connections: listing the grants failed", "user", id, "err", err)
		p.renderError(w, r, http.StatusInternalServerError, "Connections unavailable", "The gateway could not read your connections. Try again in a moment; if it keeps failing, tell the gateway's operator.")
		return
	}
	// Only an upstream the page would show may be named: the name goes to
	// the store and the log, and a made-up one must reach neither.
	if !known(conns, name) {
		p.renderError(w, r, http.StatusNotFound, "Unknown upstream", "There is no such upstream to disconnect.")
		return
	}
	key := flashDisconnected
	if err := p.grants.Disconnect(r.Context(), id, name); err != nil {
		p.log.Error("connections: disconnect failed", "user", id, "upstream", name, "err", err)
		key = flashDisconnectFailed
	} else {
		p.log.Info("connections: disconnected", "user", id, "upstream", name)
	}
	noStore(w)
	// 303: the browser follows with a GET, so a reload does not post again.
	http.Redirect(w, r, p.base+"?"+paramFlash+"="+key, http.StatusSeeOther)
}

func known(conns []Connection, name string) bool {
	for _, c := range conns {
		if c.Upstream == name {
			return true
		}
	}
	return false
}

func (p *Page) notSignedIn(w http.ResponseWriter, r *http.Request) {
	p.renderError(w, r, http.StatusUnauthorized, "Not signed in", "Sign in to the gateway to see your connections, then open this page again.")
}

// errorView is what error.html renders.
type errorView struct {
	StyleURL, Home string
	Status         int
	Title, Message string
}

func (p *Page) renderError(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	p.render(w, r, status, "error.html", errorView{StyleURL: p.styleURL, Home: p.base, Status: status, Title: title, Message: message})
}

// render answers with a template in the gateway's page shell (pageshell), under this page's CSP.
func (p *Page) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	if err := pageshell.Render(w, r, status, contentSecurityPolicy, p.tmpl, name, data); err != nil {
		p.log.Error("connections: rendering failed", "template", name, "path", r.URL.Path, "err", err)
	}
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}

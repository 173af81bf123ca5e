package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/browser"
	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/gateway/pageshell"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// stateKeyPrefix names the connect records kept under an OAuth state value,
// apart from link ids: a link id never contains ':', so no path under
// /connect/ reaches a state record.
const stateKeyPrefix = "state:"

// finishTimeout bounds the callback's work once the code is in hand: the
// exchange, storing the grant and the notification. They run detached from
// the browser's request, since a code is single-use: a tab closed mid-way
// must not lose the grant it paid for.
const finishTimeout = 30 * time.Second

// HandlerConfig configures a Handler.
type HandlerConfig struct {
	// Store keeps the connect records and the grants. Required.
	Store Store
	// Flows gives each upstream's flow. Required.
	Flows Flows
	// Sealer seals the pending authorizations and the grants. Required.
	Sealer Sealer
	// Notifier is told of each completed connection. Required.
	Notifier Notifier
	// User gives the browser's signed-in person; nil means
	// browser.UserFrom(r.Context()), which browser.SignIn.Require fills.
	User func(r *http.Request) (browser.User, bool)
	// PendingTTL is how long the store keeps a pending authorization: it
	// should equal the flows' FlowConfig.MaxAge (Finish refuses an older
	// one anyway). 0 means upstreamauth.DefaultMaxAge.
	PendingTTL time.Duration
	// ClientIDURL and RedirectURL, when both set, have the Handler serve
	// the Client ID Metadata Document (upstreamauth.MetadataDocument) at
	// MetadataDocumentPath: ClientIDURL is MetadataDocumentURL(publicURL),
	// RedirectURL is CallbackURL(publicURL). Otherwise that path is 404.
	ClientIDURL, RedirectURL string
	// ClientName is the document's client_name, shown on consent pages;
	// "" means "Switchboard".
	ClientName string
	// Logger receives refusals and failures, never a secret. nil means
	// slog.Default().
	Logger *slog.Logger
	// Links mints the link that StartPath follows for the signed-in user;
	// nil means StartPath is 404.
	Links *Links
}

// Handler serves /connect/. Mount it at Prefix; it sees the full path:
//
//	GET /connect/{id}                     a link: to the upstream's authorization server
//	GET /connect/start/{upstream}         a fresh link for the signed-in user, followed at once
//	GET /connect/callback                 the OAuth redirect URI: stores the grant
//	GET /connect/client-metadata.json     the Client ID Metadata Document
//
// The first three need the browser signed in: wrap the Handler with
// browser.SignIn.Require for them. The document must be served without
// sign-in, since authorization servers fetch it: with a ServeMux,
//
//	mux.Handle("GET "+connect.MetadataDocumentPath, h)
//	mux.Handle(connect.Prefix, signIn.Require(h))
//
// (the more specific pattern wins). The Handler checks the user itself too,
// and answers 401 without one. It is safe for concurrent use.
type Handler struct {
	store      Store
	flows      Flows
	sealer     Sealer
	notifier   Notifier
	links      *Links // nil: no start
	user       func(*http.Request) (browser.User, bool)
	pendingTTL time.Duration
	metadata   []byte // nil: no document
	log        *slog.Logger
	mux        *http.ServeMux
	page       *template.Template
}

var _ http.Handler = (*Handler)(nil)

// NewHandler checks cfg and builds the Handler.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Store == nil || cfg.Flows == nil || cfg.Sealer == nil || cfg.Notifier == nil {
		return nil, errors.New("connect: handler: Store, Flows, Sealer and Notifier are required")
	}
	h := &Handler{
		store:      cfg.Store,
		flows:      cfg.Flows,
		sealer:     cfg.Sealer,
		notifier:   cfg.Notifier,
		links:      cfg.Links,
		user:       cfg.User,
		pendingTTL: cfg.PendingTTL,
		log:        cfg.Logger,
		mux:        http.NewServeMux(),
		page:       template.Must(pageshell.New("page", nil).Parse(pageHTML)),
	}
	if h.user == nil {
		h.user = func(r *http.Request) (browser.User, bool) { return browser.UserFrom(r.Context()) }
	}
	switch {
	case h.pendingTTL < 0 || h.pendingTTL > state.MaxConnectTTL:
		return nil, fmt.Errorf("connect: handler: pending ttl %v (0 to %v)", h.pendingTTL, state.MaxConnectTTL)
	case h.pendingTTL == 0:
		h.pendingTTL = upstreamauth.DefaultMaxAge
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if (cfg.ClientIDURL == "") != (cfg.RedirectURL == "") {
		return nil, errors.New("connect: handler: ClientIDURL and RedirectURL go together")
	}
	if cfg.ClientIDURL != "" {
		name := cfg.ClientName
		if name == "" {
			name = "Switchboard"
		}
		h.metadata = upstreamauth.MetadataDocument(cfg.ClientIDURL, name, []string{cfg.RedirectURL})
	}
	// Literal segments win over the wildcard (net/http's "most specific
	// pattern"), so callback and the document are never taken for ids.
	h.mux.HandleFunc("GET "+CallbackPath, h.callback)
	h.mux.HandleFunc("GET "+MetadataDocumentPath, h.metadataDocument)
	h.mux.HandleFunc("GET "+Prefix+"{id}", h.link)
	h.mux.HandleFunc("GET "+StartPath+"{upstream}", h.start)
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// What a person is told. Fixed sentences, with the upstream's configured
// name at most: nothing from the request or the authorization server is
// echoed but a validated error code.
const (
	msgSignIn      = "Sign in to the gateway first, then open the link again."
	msgLinkUsed    = "This link was already used or has expired. Ask your client to try the call again; it will give you a new link."
	msgNotFound    = "There is no such link. Ask your client to try the call again; it will give you a new link."
	msgNoUpstream  = "There is no such upstream to connect. Go back to the connections page and choose one from the list."
	msgWrongUser   = "This link belongs to another account. It has been cancelled: if it was meant for you, sign in with the account you use in your client and ask your client to try the call again."
	msgStore       = "The gateway could not reach its state store. Try again in a moment; if it keeps failing, tell the gateway's operator."
	msgNoFlow      = "The gateway cannot reach the authorization server of this upstream right now. Ask your client to try the call again later; if it keeps failing, tell the gateway's operator."
	msgInternal    = "The gateway could not continue. Ask your client to try the call again; if it keeps failing, tell the gateway's operator."
	msgCallbackOld = "This sign-in has expired or was already used. Ask your client to try the call again; it will give you a new link."
	msgMixUp       = "The answer did not come from this upstream's authorization server, so the gateway refused it. Ask your client to try the call again."
	msgDenied      = "The authorization server did not grant access. Ask your client to try the call again if you want to connect."
	msgRefused     = "The authorization server refused the request. Ask your client to try the call again; if it keeps failing, tell the gateway's operator."
	msgASFailed    = "The authorization server failed to complete the connection. Try again in a moment by asking your client to retry the call; if it keeps failing, tell the gateway's operator."
	msgConnected   = "Connected to %s. You can close this tab and return to your client."
)

// link serves GET /connect/{id}: it spends the link, checks that the
// browser is the principal it was made for, and sends it to the upstream's
// authorization server with a fresh pending authorization kept under its
// state.
func (h *Handler) link(w http.ResponseWriter, r *http.Request) {
	user, ok := h.signedIn(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if !validLinkID(id) {
		h.render(w, r, http.StatusNotFound, "Link not found", "", msgNotFound)
		return
	}
	h.follow(w, r, user, id)
}

// start serves GET /connect/start/{upstream}: the connections page's
// connect button. The signed-in user gets a fresh link bound to themselves,
// with no session to notify, which is followed at once, as if they had
// opened it: the same checks, the same pending authorization, and the link
// id never leaves the gateway. An upstream that is not configured is 404,
// before anything is stored.
func (h *Handler) start(w http.ResponseWriter, r *http.Request) {
	user, ok := h.signedIn(w, r)
	if !ok {
		return
	}
	if h.links == nil {
		h.render(w, r, http.StatusNotFound, "Not found", "", msgNoUpstream)
		return
	}
	upstream, ctx := r.PathValue("upstream"), r.Context()
	if _, err := h.flows.Flow(ctx, upstream); err != nil {
		if errors.Is(err, ErrUnknownUpstream) {
			// Not logged nor shown: the name is the request's.
			h.render(w, r, http.StatusNotFound, "No such upstream", "", msgNoUpstream)
			return
		}
		h.log.Error("connect: no flow for the upstream", "upstream", upstream, "err", err)
		h.render(w, r, http.StatusBadGateway, "Cannot connect now", upstream, msgNoFlow)
		return
	}
	id, err := h.links.mint(ctx, user.Key(), upstream, "", "")
	if errors.Is(err, ErrTooManyLinks) {
		h.log.Warn("connect: a person asked for too many links", "upstream", upstream, "sub", user.Subject)
		h.render(w, r, http.StatusTooManyRequests, "Too many attempts", upstream, "You started connecting many times in a short while. Wait a minute, then try again.")
		return
	}
	if err != nil {
		h.log.Error("connect: minting a link", "upstream", upstream, "sub", user.Subject, "err", err)
		h.render(w, r, http.StatusServiceUnavailable, "Try again", upstream, msgStore)
		return
	}
	h.follow(w, r, user, id)
}

// follow spends the link id, checks that user is the principal it was made
// for, and sends the browser to the upstream's authorization server with a
// fresh pending authorization kept under its state.
func (h *Handler) follow(w http.ResponseWriter, r *http.Request, user browser.User, id string) {
	ctx := r.Context()
	// Taken before the user is checked: the link is single-use whoever
	// opens it, so a link that reached the wrong person is dead.
	rec, err := h.store.TakeConnect(ctx, id)
	switch {
	case errors.Is(err, state.ErrNotFound):
		h.render(w, r, http.StatusGone, "Link expired", "", msgLinkUsed)
		return
	case err != nil:
		h.log.Error("connect: reading a link", "err", redacted(err, id))
		h.render(w, r, http.StatusServiceUnavailable, "Try again", "", msgStore)
		return
	case rec.Pending != nil:
		// A state record under a link-shaped id: not ours to follow.
		h.render(w, r, http.StatusGone, "Link expired", "", msgLinkUsed)
		return
	}
	if !h.sameUser(user, rec, "link") {
		h.render(w, r, http.StatusForbidden, "Wrong account", "", msgWrongUser)
		return
	}
	flow, err := h.flows.Flow(ctx, rec.Upstream)
	if err != nil {
		h.log.Error("connect: no flow for the upstream", "upstream", rec.Upstream, "err", err)
		h.render(w, r, http.StatusBadGateway, "Cannot connect now", rec.Upstream, msgNoFlow)
		return
	}
	// A step-up asks for the granted scopes and those the upstream asked for (Tokens.StepUp).
	extra, _ := stepUp(ctx, h.store, h.sealer, rec.Principal, rec.Upstream)
	pending, authURL := flow.Start(extra...)
	plain, err := json.Marshal(pending)
	if err != nil {
		h.fail(w, r, rec.Upstream, fmt.Errorf("connect: encoding the pending authorization: %w", err))
		return
	}
	sealed, err := h.sealer.Seal(plain, pendingAAD(rec.Principal, rec.Upstream))
	if err != nil {
		h.fail(w, r, rec.Upstream, fmt.Errorf("connect: sealing the pending authorization: %w", err))
		return
	}
	next := state.ConnectRecord{
		Principal:     rec.Principal,
		Upstream:      rec.Upstream,
		Session:       rec.Session,
		ElicitationID: rec.ElicitationID,
		Pending:       sealed,
	}
	key := stateKeyPrefix + pending.State
	if err := h.store.PutConnect(ctx, key, next, h.pendingTTL); err != nil {
		h.log.Error("connect: storing the pending authorization", "upstream", rec.Upstream, "err", redacted(err, pending.State))
		h.render(w, r, http.StatusServiceUnavailable, "Try again", rec.Upstream, msgStore)
		return
	}
	hd := w.Header()
	// The authorization URL carries the state: no cache keeps the answer,
	// and the authorization server is not told the link it came from.
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	// Not http.Redirect: it repeats the URL, state and all, in a body.
	hd.Set("Location", authURL)
	w.WriteHeader(http.StatusFound)
}

// callback serves GET /connect/callback: it spends the pending
// authorization named by state, checks the browser again, finishes the
// flow and stores the grant sealed, then has the session notified.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	user, ok := h.signedIn(w, r)
	if !ok {
		return
	}
	query := r.URL.Query()
	st := query["state"]
	// RFC 6749 §3.1: "Request and response parameters MUST NOT be included
	// more than once"; Finish checks it again against the pending state.
	if len(st) != 1 || st[0] == "" || len(st[0]) > 256 {
		h.render(w, r, http.StatusBadRequest, "Sign-in expired", "", msgCallbackOld)
		return
	}
	rec, err := h.store.TakeConnect(r.Context(), stateKeyPrefix+st[0])
	switch {
	case errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid):
		h.render(w, r, http.StatusBadRequest, "Sign-in expired", "", msgCallbackOld)
		return
	case err != nil:
		h.log.Error("connect: reading a pending authorization", "err", redacted(err, st[0]))
		h.render(w, r, http.StatusServiceUnavailable, "Try again", "", msgStore)
		return
	case rec.Pending == nil:
		h.render(w, r, http.StatusBadRequest, "Sign-in expired", "", msgCallbackOld)
		return
	}
	if !h.sameUser(user, rec, "callback") {
		h.render(w, r, http.StatusForbidden, "Wrong account", "", msgWrongUser)
		return
	}
	plain, err := h.sealer.Open(rec.Pending, pendingAAD(rec.Principal, rec.Upstream))
	if err != nil {
		h.fail(w, r, rec.Upstream, fmt.Errorf("connect: opening the pending authorization: %w", err))
		return
	}
	var pending upstreamauth.Pending
	if err := json.Unmarshal(plain, &pending); err != nil {
		// json's errors quote no value of the input for a struct target
		// of strings and a time; still, say no more than what failed.
		h.fail(w, r, rec.Upstream, errors.New("connect: decoding the pending authorization failed"))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
	defer cancel()
	flow, err := h.flows.Flow(ctx, rec.Upstream)
	if err != nil {
		h.log.Error("connect: no flow for the upstream", "upstream", rec.Upstream, "err", err)
		h.render(w, r, http.StatusBadGateway, "Cannot connect now", rec.Upstream, msgNoFlow)
		return
	}
	tok, err := flow.Finish(ctx, pending, query)
	if err != nil {
		h.finishFailed(w, r, rec, err)
		return
	}
	g := newGrant(tok, nil)
	g.Issuer = flow.Issuer()
	// A grant that answers a step-up carries the count, for the retry limit.
	_, g.StepUps = stepUp(ctx, h.store, h.sealer, rec.Principal, rec.Upstream)
	sealed, err := sealGrant(h.sealer, rec.Principal, rec.Upstream, g)
	if err != nil {
		h.fail(w, r, rec.Upstream, err)
		return
	}
	if err := h.store.PutGrant(ctx, rec.Principal, rec.Upstream, sealed); err != nil {
		h.log.Error("connect: storing the grant", "upstream", rec.Upstream, "sub", subject(rec.Principal), "err", err)
		h.render(w, r, http.StatusServiceUnavailable, "Try again", rec.Upstream, msgStore)
		return
	}
	done := rec
	done.Pending = nil
	h.notifier.Completed(ctx, done)
	h.log.Info("connect: connected", "upstream", rec.Upstream, "sub", subject(rec.Principal))
	h.render(w, r, http.StatusOK, "Connected to "+rec.Upstream, "", fmt.Sprintf(msgConnected, rec.Upstream))
}

// oauthCode is what an OAuth error code may be to be shown: RFC 6749
// §4.1.2.1 codes are a few lowercase words joined by '_'.
var oauthCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// finishFailed renders Finish's error: 400 when the answer is the user's or
// is refused as unsafe, 502 when the authorization server failed. The code
// never appears: Finish's errors are scrubbed of it, and the page shows a
// fixed sentence and at most the server's validated error code.
func (h *Handler) finishFailed(w http.ResponseWriter, r *http.Request, rec state.ConnectRecord, err error) {
	h.log.Warn("connect: the authorization did not complete", "upstream", rec.Upstream, "sub", subject(rec.Principal), "err", err)
	clientRejected(h.flows, rec.Upstream, err)
	var oe *upstreamauth.OAuthError
	switch {
	case errors.Is(err, upstreamauth.ErrMixUp):
		// RFC 9207 §2.4: "If the value does not match the expected issuer
		// identifier, clients MUST reject the authorization response".
		h.render(w, r, http.StatusBadRequest, "Connection refused", rec.Upstream, msgMixUp)
	case errors.Is(err, upstreamauth.ErrStateMismatch), errors.Is(err, upstreamauth.ErrExpired),
		errors.Is(err, upstreamauth.ErrWrongFlow), errors.Is(err, upstreamauth.ErrNoCode):
		h.render(w, r, http.StatusBadRequest, "Sign-in expired", rec.Upstream, msgCallbackOld)
	case errors.As(err, &oe):
		status, msg := http.StatusBadGateway, msgASFailed
		switch {
		case oe.Endpoint == upstreamauth.EndpointAuthorization && oe.Code == "access_denied":
			status, msg = http.StatusBadRequest, msgDenied
		case oe.Endpoint == upstreamauth.EndpointAuthorization && oe.Code != "server_error" && oe.Code != "temporarily_unavailable":
			status, msg = http.StatusBadRequest, msgRefused
		case oe.Endpoint == upstreamauth.EndpointToken && oe.Code == "invalid_grant":
			// The code was used, expired or not ours: start again.
			status, msg = http.StatusBadRequest, msgCallbackOld
		}
		if oauthCode.MatchString(oe.Code) {
			msg += " (The server said: " + oe.Code + ".)"
		}
		h.render(w, r, status, "Connection failed", rec.Upstream, msg)
	default:
		h.render(w, r, http.StatusBadGateway, "Connection failed", rec.Upstream, msgASFailed)
	}
}

// metadataDocument serves the Client ID Metadata Document. It is public
// and the same for everyone, so caches may keep it; authorization servers
// fetch it at each authorization, or cache it per its headers.
func (h *Handler) metadataDocument(w http.ResponseWriter, r *http.Request) {
	if h.metadata == nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "public, max-age=3600")
	hd.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(h.metadata) // a failed write is the reader gone
}

// signedIn returns the browser's user, or answers 401. browser.SignIn's
// Require normally stands in front and signs the browser in first: this is
// defence in depth against a wiring that forgot it.
func (h *Handler) signedIn(w http.ResponseWriter, r *http.Request) (browser.User, bool) {
	u, ok := h.user(r)
	if !ok || u.Subject == "" {
		h.render(w, r, http.StatusUnauthorized, "Sign in required", "", msgSignIn)
		return browser.User{}, false
	}
	return u, true
}

// sameUser reports whether the browser's user is the record's principal,
// and logs a refusal: who opened whose link, by subject, and nothing
// secret.
func (h *Handler) sameUser(u browser.User, rec state.ConnectRecord, step string) bool {
	if u.Key() == rec.Principal {
		return true
	}
	h.log.Warn("connect: a link opened by another account was refused and cancelled",
		"step", step, "upstream", rec.Upstream,
		"linkSub", subject(rec.Principal), "browserSub", u.Subject, "browserIss", u.Issuer)
	return false
}

// fail logs an internal failure and renders the generic page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, upstream string, err error) {
	h.log.Error("connect: failed", "upstream", upstream, "err", err)
	h.render(w, r, http.StatusInternalServerError, "Something went wrong", upstream, msgInternal)
}

// render writes a small self-contained page in the gateway's page shell (pageshell). Every page is private to
// one browser and may sit on a URL that carries a link id or a state: nothing caches it and no referrer leaves it.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, title, upstream, message string) {
	data := struct {
		Head                     pageshell.Head
		Title, Upstream, Message string
	}{pageshell.Head{Title: title, Meta: pageMeta}, title, upstream, message}
	if err := pageshell.Render(w, r, status, pageCSP, h.page, "page", data); err != nil {
		h.log.Error("connect: rendering failed", "err", err)
	}
}

// subject is the subject part of a principal key (issuer "|" subject), for
// logs: who, without the issuer's URL repeated on every line.
func subject(principal string) string {
	for i := len(principal) - 1; i >= 0; i-- {
		if principal[i] == '|' {
			return principal[i+1:]
		}
	}
	return principal
}

// pageCSP allows the pages' inline style and nothing else: no script, no form, no frame.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// pageMeta are the pages' own meta elements in the shell's head.
var pageMeta = []pageshell.Meta{{Name: "referrer", Content: "no-referrer"}}

// pageHTML is the one page, in the shell (pageshell): a title, the upstream it is about, and a message.
const pageHTML = `{{template "head" .Head}}
<style>
body{font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa;margin:0}
main{max-width:34rem;margin:4rem auto;padding:1.5rem 2rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}
h1{font-size:1.3rem;margin:0 0 .5rem}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Upstream}}<p>Upstream: <strong>{{.Upstream}}</strong></p>{{end}}
<p>{{.Message}}</p>
</main>
</body>
</html>
`

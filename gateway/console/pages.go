package console

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Query parameters: the flash key and its count after an action's redirect,
// and the pages' filters.
const (
	paramFlash    = "flash"
	paramCount    = "n"
	paramEndpoint = "endpoint"
	paramQuery    = "q"
	maxQueryRunes = 200
	auditLimit    = 100
)

// auditOutcomes are the outcomes the audit filter offers.
var auditOutcomes = []string{"ok", "error", "denied", "refused", "not_connected", "cancelled", "timeout"}

// shell is what every page's layout renders: the title, the navigation, the
// admin's name, a flash message and the CSRF token for its forms.
type shell struct {
	Title, StyleURL, Base string
	Subject               string
	Nav                   []navItem
	Flash                 *flash
	CSRFField, CSRFToken  string
}

type navItem struct {
	Label, URL string
	Current    bool
}

// flash is a message shown once at the top of a page.
type flash struct {
	Kind string // "ok" or "error": the CSS class
	Text string
}

// flashFor gives the message of a flash key and count; ok is false for any
// other key. The query names a key, never a message, so a crafted link
// cannot make the console say anything of its choosing.
func flashFor(key string, n int) (f flash, ok bool) {
	switch key {
	case "approved":
		return flash{"ok", "Approved. Clients get the new definition, and the lock file records it."}, true
	case "approved-all":
		return flash{"ok", fmt.Sprintf("Approved %s. Clients get the new definitions, and the lock file records them.", plural(n, "changed definition"))}, true
	case "approve-stale":
		return flash{"error", "Not approved: that definition changed again since the page showed it. Review the new one below."}, true
	case "approve-gone":
		return flash{"error", "Nothing to approve: that definition no longer differs from its pin."}, true
	case "approve-failed":
		return flash{"error", "The approval did not complete. Try again; the gateway's log says more."}, true
	case "revoked":
		return flash{"ok", "Revoked. The gateway no longer holds that person's grant for the upstream."}, true
	case "revoked-all":
		return flash{"ok", fmt.Sprintf("Revoked %s for the upstream.", plural(n, "grant"))}, true
	case "revoke-gone":
		return flash{"error", "Nothing to revoke: that person is not connected to the upstream."}, true
	case "revoke-failed":
		return flash{"error", "The revocation did not complete. Try again; the gateway's log says more."}, true
	case "reloaded":
		return flash{"ok", "Reloaded: the gateway runs the configuration file as it is now."}, true
	case "reload-refused":
		return flash{"error", "The reload was refused: the configuration has the problems listed below. The gateway still runs the previous one."}, true
	case "reload-failed":
		return flash{"error", "The reload did not complete. Try again; the gateway's log says more."}, true
	}
	return flash{}, false
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// shell builds the layout's data for r.
func (c *Console) shell(w http.ResponseWriter, r *http.Request, subject string) shell {
	s := shell{StyleURL: c.styleURL, Base: c.base, Subject: subject, CSRFField: CSRFField, CSRFToken: c.csrfToken(w, r)}
	path := strings.TrimSuffix(r.URL.Path, "/")
	for _, n := range []navItem{
		{Label: "Overview", URL: c.base},
		{Label: "Catalog", URL: c.base + "/catalog"},
		{Label: "Pins", URL: c.base + "/pins"},
		{Label: "People", URL: c.base + "/people"},
		{Label: "Audit", URL: c.base + "/audit"},
		{Label: "Config", URL: c.base + "/config"},
	} {
		n.Current = n.URL == path
		if n.Current {
			s.Title = n.Label
		}
		s.Nav = append(s.Nav, n)
	}
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get(paramCount))
	if f, ok := flashFor(q.Get(paramFlash), n); ok {
		s.Flash = &f
	}
	return s
}

// funcs are the templates' formatting helpers.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2 Jan 2006, 15:04:05 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"ago": func(t time.Time) string { return ago(c.now().Sub(t)) },
		"ms":  millis,
		"pct": func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
		"rate": func(f float64) string {
			return strconv.FormatFloat(f, 'f', 1, 64) + "/min"
		},
		"plural": plural,
		"minutes": func(d time.Duration) string {
			if d < time.Minute { // a gateway just started: its metrics go back no further
				return plural(int(d.Seconds()), "second")
			}
			return plural(int(math.Round(d.Minutes())), "minute")
		},
		"stateClass": func(s string) string {
			switch s {
			case "ready", "ok", "pinned":
				return "ok"
			case "down", "closed", "error", "denied", "withheld", "changed":
				return "bad"
			case "connecting", "refused", "timeout", "new", "drained":
				return "pending"
			}
			return "neutral"
		},
	}
}

// millis formats a latency for people: "850 µs", "12 ms", "1.4 s".
func millis(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// ago says how long ago d was, in words, rounded down.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 48*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	}
	return plural(int(d/(24*time.Hour)), "day") + " ago"
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request, s shell) {
	o, err := c.src.Overview(r.Context())
	if err != nil {
		c.failed(w, r, "read its state", err)
		return
	}
	c.page(w, r, "overview", struct {
		shell
		Overview
	}{s, o})
}

// catalogView is what catalog.html renders.
type catalogView struct {
	shell
	Endpoints []string
	Catalog   Catalog
	Counts    map[string]int
	Query     string
	Result    *SearchResult
	SearchErr bool
}

func (c *Console) catalogPage(w http.ResponseWriter, r *http.Request, s shell) {
	ctx := r.Context()
	eps, err := c.src.Endpoints(ctx)
	if err != nil {
		c.failed(w, r, "list its endpoints", err)
		return
	}
	v := catalogView{shell: s, Endpoints: eps, Counts: map[string]int{}}
	ep := r.URL.Query().Get(paramEndpoint)
	if ep == "" {
		if len(eps) == 0 {
			c.page(w, r, "catalog", v) // no endpoint: nothing to list or search
			return
		}
		ep = eps[0]
	}
	v.Catalog, err = c.src.Catalog(ctx, ep)
	if errors.Is(err, ErrNotFound) {
		c.renderError(w, r, http.StatusNotFound, "Unknown endpoint", "The gateway has no endpoint of that name. Pick one on the catalog page.")
		return
	}
	if err != nil {
		c.failed(w, r, "read the endpoint's catalog", err)
		return
	}
	for _, it := range v.Catalog.Items {
		v.Counts[it.Kind]++
	}
	if q := strings.TrimSpace(r.URL.Query().Get(paramQuery)); q != "" {
		if rs := []rune(q); len(rs) > maxQueryRunes {
			q = string(rs[:maxQueryRunes])
		}
		v.Query = q
		res, err := c.src.Search(ctx, v.Catalog.Endpoint, q)
		if err != nil {
			c.log.Error("console: search failed", "endpoint", v.Catalog.Endpoint, "err", err)
			v.SearchErr = true
		} else {
			v.Result = &res
		}
	}
	c.page(w, r, "catalog", v)
}

// pinView is one changed definition as pins.html renders it.
type pinView struct {
	PinDrift
	ID        string // the section's id, for its heading's aria-labelledby
	Rows      []DiffRow
	Invisible []Segment // the invisible characters of the seen definition, once each
	HasPinned bool
}

func (c *Console) pinsPage(w http.ResponseWriter, r *http.Request, s shell) {
	drift, err := c.src.Pins(r.Context())
	if err != nil {
		c.failed(w, r, "read the pins", err)
		return
	}
	views := make([]pinView, 0, len(drift))
	for i, d := range drift {
		pv := pinView{PinDrift: d, ID: "pin-" + strconv.Itoa(i+1), HasPinned: d.PinnedText != ""}
		if pv.HasPinned {
			pv.Rows = SideBySide(d.PinnedText, d.SeenText)
		} else {
			pv.Rows = SideBySide("", d.SeenText)
		}
		seen := map[string]bool{}
		for _, seg := range Visible(d.SeenText) {
			if seg.Code != "" && !seen[seg.Code] {
				seen[seg.Code] = true
				pv.Invisible = append(pv.Invisible, seg)
			}
		}
		views = append(views, pv)
	}
	c.page(w, r, "pins", struct {
		shell
		Pins []pinView
	}{s, views})
}

func (c *Console) peoplePage(w http.ResponseWriter, r *http.Request, s shell) {
	ups, err := c.src.Connections(r.Context())
	if err != nil {
		c.failed(w, r, "read the connections", err)
		return
	}
	c.page(w, r, "people", struct {
		shell
		Upstreams []UpstreamConnections
	}{s, ups})
}

// auditView is what audit.html renders.
type auditView struct {
	shell
	Filter   AuditFilter
	Outcomes []string
	Events   []AuditEvent
	Chain    ChainState
	ChainErr bool
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s shell) {
	q := r.URL.Query()
	f := AuditFilter{
		Person:   field(q.Get("person")),
		Tool:     field(q.Get("tool")),
		Outcome:  field(q.Get("outcome")),
		Endpoint: field(q.Get("endpoint")),
		Limit:    auditLimit,
	}
	events, err := c.src.Audit(r.Context(), f)
	if err != nil {
		c.failed(w, r, "read the audit log", err)
		return
	}
	v := auditView{shell: s, Filter: f, Outcomes: auditOutcomes, Events: events}
	if v.Chain, err = c.src.VerifyChain(r.Context()); err != nil {
		c.log.Error("console: verifying the audit chain failed", "err", err)
		v.ChainErr = true
	}
	c.page(w, r, "audit", v)
}

// field trims a filter's value and bounds its length.
func field(s string) string {
	s = strings.TrimSpace(s)
	if rs := []rune(s); len(rs) > maxQueryRunes {
		s = string(rs[:maxQueryRunes])
	}
	return s
}

func (c *Console) configPage(w http.ResponseWriter, r *http.Request, s shell) {
	cfg, err := c.src.Config(r.Context())
	if err != nil {
		c.failed(w, r, "read its configuration", err)
		return
	}
	c.page(w, r, "config", struct {
		shell
		Config ConfigView
	}{s, cfg})
}

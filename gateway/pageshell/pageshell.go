// Package pageshell is the shell every HTML page of the gateway for people is served in: the start of the
// document (doctype, language, character set, viewport, the page's own meta elements, the title) as the template
// "head", and the answer around it: rendered into a buffer first, so that a template error is a 500 rather than
// half a page, and sent with the headers every such page needs (the page's Content-Security-Policy, no sniffing,
// no caching, no referrer). gateway/connect's pages and gateway/connections' page are rendered in it.
package pageshell

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

// Head is what the "head" template writes: the page's meta elements after the shell's, and its title (followed by
// "· Switchboard"). The page goes on after the title: its styles, "</head>", its body.
type Head struct {
	Title string
	Meta  []Meta
}

// Meta is one <meta name="…" content="…"> element.
type Meta struct{ Name, Content string }

const headTemplate = `{{define "head" -}}
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{range .Meta}}<meta name="{{.Name}}" content="{{.Content}}">
{{end}}<title>{{.Title}} · Switchboard</title>
{{- end}}`

// New returns a template set named name that holds the shell's "head" and funcs; the page's own templates are
// parsed into it.
func New(name string, funcs template.FuncMap) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).Parse(headTemplate))
}

// failed is the page sent when a template fails.
const failed = `<!doctype html><html lang="en"><title>Error</title><p>The page could not be rendered.</p></html>`

// Render answers with the template name of t executed with data, with status and the shell's headers (csp is the
// page's Content-Security-Policy); a HEAD request gets the headers alone. A template error is answered with 500
// and a page that says so, and returned for the caller to log.
func Render(w http.ResponseWriter, r *http.Request, status int, csp string, t *template.Template, name string, data any) error {
	var b bytes.Buffer
	err := t.ExecuteTemplate(&b, name, data)
	if err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(failed)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Pages are private to one browser (a person's connections, a CSRF token, a link id or a state in the URL).
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		// A failed write is the browser gone; there is no one left to tell.
		_, _ = w.Write(b.Bytes())
	}
	return err
}

// Stylesheet is a page's stylesheet, served at a URL that names its version: cached for a year, revalidated by its
// ETag, never sniffed as anything but CSS.
type Stylesheet struct {
	css     []byte
	etag    string
	version string
}

// NewStylesheet versions css by its SHA-256.
func NewStylesheet(css []byte) *Stylesheet {
	sum := sha256.Sum256(css)
	v := hex.EncodeToString(sum[:8])
	return &Stylesheet{css: css, etag: `"` + v + `"`, version: v}
}

// URL is where a page served under base links the stylesheet: base + "/style.css?v=" + its version, so that a
// new stylesheet is a new URL.
func (s *Stylesheet) URL(base string) string { return base + "/style.css?v=" + s.version }

// ETag is the stylesheet's entity tag.
func (s *Stylesheet) ETag() string { return s.etag }

// ServeHTTP serves the stylesheet, or 304 to a request that has it.
func (s *Stylesheet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=31536000, immutable") // the URL names the version
	h.Set("ETag", s.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, s.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// A failed write is the browser gone; there is no one left to tell.
	_, _ = w.Write(s.css)
}

// BasePath is the path a page is served under: base, or def when base is empty. It must start with "/" and end
// without one, with no query or fragment, since the page builds its links and form actions by appending to it.
func BasePath(base, def string) (string, error) {
	if base == "" {
		base = def
	}
	if !strings.HasPrefix(base, "/") || strings.HasSuffix(base, "/") || strings.ContainsAny(base, "?#") {
		return "", fmt.Errorf("BasePath %q must start with / and end without one, with no query or fragment", base)
	}
	return base, nil
}

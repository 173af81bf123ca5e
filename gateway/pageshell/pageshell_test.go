package pageshell

import (
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRender: a page in the shell, its headers, HEAD without a body, and a failing template answered with 500.
func TestRender(t *testing.T) {
	tmpl := template.Must(New("t", template.FuncMap{"up": func(s string) string { return s + "!" }}).Parse(
		`{{template "head" .Head}}` + "\n</head><p>{{up .Text}}</p>" + `{{define "bad"}}{{.Missing.Field}}{{end}}`))
	data := struct {
		Head Head
		Text string
	}{Head{Title: "A <b>", Meta: []Meta{{Name: "referrer", Content: "no-referrer"}}}, "hi"}
	const page = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
		"<meta name=\"referrer\" content=\"no-referrer\">\n<title>A &lt;b&gt; · Switchboard</title>\n</head><p>hi!</p>"
	for _, tc := range []struct {
		name, method, tmpl string
		status, want       int
		body               string
		err                bool
	}{
		{"page", http.MethodGet, "t", http.StatusNotFound, http.StatusNotFound, page, false},
		{"head", http.MethodHead, "t", http.StatusOK, http.StatusOK, "", false},
		{"failed", http.MethodGet, "bad", http.StatusOK, http.StatusInternalServerError, failed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			err := Render(w, httptest.NewRequest(tc.method, "/", nil), tc.status, "default-src 'none'", tmpl, tc.tmpl, data)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if w.Code != tc.want || w.Body.String() != tc.body {
				t.Fatalf("got %d %q, want %d %q", w.Code, w.Body.String(), tc.want, tc.body)
			}
			for k, v := range map[string]string{
				"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": "default-src 'none'",
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
			} {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestStylesheet: the stylesheet is CSS only, cached for long under a URL that names its version, and a request
// that has it gets 304; HEAD gets no body.
func TestStylesheet(t *testing.T) {
	s := NewStylesheet([]byte("body{color:#111}"))
	if u := s.URL("/console"); !strings.HasPrefix(u, "/console/style.css?v=") || !strings.Contains(s.ETag(), u[len("/console/style.css?v="):]) {
		t.Errorf("URL %q, ETag %q: the URL must name the version the ETag tags", u, s.ETag())
	}
	for _, tc := range []struct {
		method, ifNoneMatch string
		status              int
		body                string
	}{
		{http.MethodGet, "", http.StatusOK, "body{color:#111}"},
		{http.MethodHead, "", http.StatusOK, ""},
		{http.MethodGet, s.ETag(), http.StatusNotModified, ""},
		{http.MethodGet, `"other"`, http.StatusOK, "body{color:#111}"},
	} {
		r := httptest.NewRequest(tc.method, "/console/style.css", nil)
		if tc.ifNoneMatch != "" {
			r.Header.Set("If-None-Match", tc.ifNoneMatch)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		h := w.Header()
		if w.Code != tc.status || w.Body.String() != tc.body || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") != s.ETag() ||
			(tc.status == http.StatusOK && (h.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(h.Get("Cache-Control"), "immutable"))) {
			t.Errorf("%s If-None-Match %q: %d %q %v", tc.method, tc.ifNoneMatch, w.Code, w.Body, h)
		}
	}
}

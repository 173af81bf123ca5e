package pageshell

import (
	"html/template"
	"net/http"
	"net/http/httptest"
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

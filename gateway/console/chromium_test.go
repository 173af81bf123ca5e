package console

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// e2eGate skips the browser test when SWITCHBOARD_E2E=off or in -short mode,
// and returns how to report a missing browser: a skip, or a failure under
// SWITCHBOARD_E2E=require (as in CI). The convention of cmd/switchboard's
// e2e tests and gateway/connections'.
func e2eGate(t *testing.T) (missing func(format string, args ...any)) {
	t.Helper()
	mode := os.Getenv("SWITCHBOARD_E2E")
	if mode == "off" {
		t.Skip("SWITCHBOARD_E2E=off")
	}
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	return func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if mode == "require" {
			t.Fatalf("%s (SWITCHBOARD_E2E=require)", msg)
		}
		t.Skipf("%s; set SWITCHBOARD_E2E=require to make this a failure", msg)
	}
}

// findBrowser is the first of Debian's chromium, Ubuntu's name for it, and
// Google's build found on PATH.
func findBrowser() (string, error) {
	var errs []string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		p, err := exec.LookPath(name)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("no browser found: %s", strings.Join(errs, "; "))
}

// screenshotDir is $SWITCHBOARD_SCREENSHOTS (made if missing), where the docs
// take their pictures from, else a directory of the test's own.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("SWITCHBOARD_SCREENSHOTS: %v", err)
	}
	return dir
}

// a11yCheck is the accessibility check run in each page (by the test, over
// DevTools: the pages themselves run no script). It returns the problems
// found, one a line, "" when none: the document's language; one banner,
// one navigation and one main landmark; a label for every form control; alt
// text on every image; a name on every link and button; unique ids;
// headings that start at h1 and skip no level; and WCAG AA contrast (4.5:1,
// 3:1 for large text) of every visible text against the background it is
// drawn on, as the browser computed both.
//
//go:embed testdata/a11y.js
var a11yCheck string

// TestBrowser opens every console page in headless Chromium against the fake
// source, checks each one's accessibility, saves a screenshot of each, then
// clicks every action and sees its effect; an action without its CSRF token
// and the console of someone who is not an admin are refused.
func TestBrowser(t *testing.T) {
	missing := e2eGate(t)
	exe, err := findBrowser()
	if err != nil {
		missing("%v: run .ci/setup (Debian's chromium)", err)
	}
	dir := screenshotDir(t)
	c, src := newTestConsole(t, true)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	outsider, _ := newTestConsole(t, false)
	outsiderSrv := httptest.NewServer(outsider)
	t.Cleanup(outsiderSrv.Close)

	// The timeout bounds a hung browser; nothing is timed against it.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.WindowSize(1280, 900),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root, and CI runs as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var (
		consoleMu sync.Mutex
		console   []string
		consoleWG sync.WaitGroup
	)
	if err := chromedp.Do(bctx); err != nil { // starts the browser and opens the tab
		t.Fatalf("starting %s: %v", exe, err)
	}
	messages := chromedp.Console(bctx)
	consoleWG.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			consoleMu.Lock()
			console = append(console, fmt.Sprintf("%s: %s", m.Type, m.Text))
			consoleMu.Unlock()
		}
	})

	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	// open loads a page and checks its status.
	open := func(url string, status int64) {
		t.Helper()
		resp, err := chromedp.RunResponse(bctx, chromedp.Navigate(url))
		if err != nil {
			t.Fatalf("opening %s: %v", url, err)
		}
		if resp.Status != status {
			t.Fatalf("%s: HTTP %d, want %d", url, resp.Status, status)
		}
	}
	// click presses a button that posts a form and waits for the page the
	// action redirects to; it returns that page's status and flash.
	click := func(sel string) (int64, string) {
		t.Helper()
		resp, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("clicking %s: %v", sel, err)
		}
		return resp.Status, eval(`(f => f ? f.textContent : "")(document.querySelector("p.flash"))`)
	}
	accessible := func(page string) {
		t.Helper()
		if problems := eval(a11yCheck); problems != "" {
			t.Errorf("%s: accessibility:\n%s", page, problems)
		}
	}

	// 1. Every page renders, is accessible, and goes in the docs.
	pages := []struct{ path, shot, wait string }{
		{"/console", "console-overview.png", "table"},
		{"/console/catalog?endpoint=default&q=open+an+issue", "console-catalog.png", "ol.hits"},
		{"/console/pins", "console-pins.png", "table.diff"},
		{"/console/people", "console-people.png", "ul.scopes"},
		{"/console/audit", "console-audit.png", "table"},
		{"/console/config", "console-config.png", "ul.problems"},
	}
	for _, p := range pages {
		open(srv.URL+p.path, http.StatusOK)
		if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(p.wait))); err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		// The stylesheet loaded under the CSP: the banner's dark background
		// comes only from it.
		if bg := eval(`getComputedStyle(document.querySelector(".banner")).backgroundColor`); bg != "rgb(36, 41, 47)" {
			t.Errorf("%s: banner background %q: the stylesheet did not apply", p.path, bg)
		}
		if w := eval(`String(document.documentElement.scrollWidth <= window.innerWidth)`); w != "true" {
			t.Errorf("%s: the page scrolls sideways at 1280px", p.path)
		}
		accessible(p.path)
		shoot(p.shot)
	}
	// The pins page shows the hidden characters as markers a person sees.
	open(srv.URL+"/console/pins", http.StatusOK)
	if got := eval(`[...document.querySelectorAll("td.add .inv")].map(e => e.textContent).join(" ")`); got != "U+200B U+202E U+202C" {
		t.Errorf("markers in the seen definition: %q", got)
	}
	if vis := eval(`String(document.querySelector("td.add .inv").getBoundingClientRect().width > 10)`); vis != "true" {
		t.Error("the U+200B marker has no visible width")
	}

	// The check finds what it looks for: a control without a label, grey
	// on grey, a skipped heading level.
	eval(`(() => {
		const m = document.querySelector("main");
		m.insertAdjacentHTML("beforeend", '<input id="bare"><p id="faint">faint</p><h4>deep</h4>');
		document.getElementById("faint").style.color = "#bbbbbb";
		return "";
	})()`)
	problems := eval(a11yCheck)
	for _, want := range []string{"form control input#bare has no label", "for p#faint", "heading h4 follows h2"} {
		if !strings.Contains(problems, want) {
			t.Errorf("the accessibility check missed %q; it found:\n%s", want, problems)
		}
	}

	// 2. The forms that read: the catalog's search box and endpoint picker,
	// the audit filters; typed, not navigated to.
	open(srv.URL+"/console/catalog", http.StatusOK)
	if _, err := chromedp.RunResponse(bctx,
		chromedp.SetValue(chromedp.CSS("#endpoint"), "team"),
		chromedp.SendKeys(chromedp.CSS("#q"), "create issue"),
		chromedp.Submit(chromedp.CSS("#q")),
	); err != nil {
		t.Fatal(err)
	}
	if loc := eval(`location.search`); loc != "?endpoint=team&q=create+issue" {
		t.Errorf("the search form went to %q", loc)
	}
	if got := eval(`document.querySelector("ol.hits li code").textContent`); got != "github__create_issue" {
		t.Errorf("first hit %q", got)
	}
	open(srv.URL+"/console/audit", http.StatusOK)
	if _, err := chromedp.RunResponse(bctx,
		chromedp.SetValue(chromedp.CSS("#outcome"), "denied"),
		chromedp.Click(chromedp.CSS(`form.inline button[type="submit"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if n := eval(`String(document.querySelectorAll("main table tbody tr").length)`); n != "1" {
		t.Errorf("the outcome filter left %s events, want bob's one denial", n)
	}

	// 3. An action without its CSRF token is refused, and changes nothing.
	open(srv.URL+"/console/config", http.StatusOK)
	eval(`document.querySelector('input[name="csrf_token"]').value = "forged"; ""`)
	if status, _ := click(`form[action$="/config/reload"] button`); status != http.StatusForbidden {
		t.Errorf("reload with a forged token: HTTP %d, want 403", status)
	}
	accessible("the refusal")
	shoot("console-refused.png")
	if got := src.recorded(); len(got) != 0 {
		t.Fatalf("a forged action reached the source: %q", got)
	}

	// 4. Every action, clicked: each redirects to its page with a message,
	// and the page shows its effect.
	actions := []struct {
		page, button, flash, effect, want string
		action                            string
	}{
		{"/console/pins", `section.pin form[action$="/pins/approve"] button`, "Approved.",
			`String(document.querySelectorAll("section.pin").length)`, "1",
			"approve " + admin + " github/tool/create_issue sha256:bbbb"},
		{"/console/pins", `form[action$="/pins/approve-all"] button`, "Approved 1 changed definition.",
			`String(document.querySelectorAll("section.pin").length)`, "0",
			"approve-all " + admin},
		{"/console/people", `form[action$="/people/revoke"]:has(input[value="https://idp.example|bob"]) button`, "Revoked.",
			`String(document.querySelectorAll("main table tbody tr").length)`, "1",
			"revoke " + admin + " github https://idp.example|bob"},
		{"/console/people", `form[action$="/people/revoke-all"] button`, "Revoked 1 grant for the upstream.",
			`String(document.querySelectorAll("main table").length)`, "0",
			"revoke-all " + admin + " github"},
		{"/console/config", `form[action$="/config/reload"] button`, "Reloaded:",
			`document.querySelector("#reload + p .badge").textContent`, "applied",
			"reload " + admin},
	}
	for i, a := range actions {
		open(srv.URL+a.page, http.StatusOK)
		status, flash := click(a.button)
		if status != http.StatusOK || !strings.HasPrefix(flash, a.flash) {
			t.Errorf("%s: HTTP %d, flash %q; want 200 and %q", a.action, status, flash, a.flash)
		}
		if loc := eval(`location.pathname`); loc != a.page {
			t.Errorf("%s: the browser is at %q, want %q", a.action, loc, a.page)
		}
		if got := eval(a.effect); got != a.want {
			t.Errorf("%s: %s = %q, want %q", a.action, a.effect, got, a.want)
		}
		if got := src.recorded(); len(got) != i+1 || got[i] != a.action {
			t.Errorf("after %s the source saw %q", a.action, got)
		}
		if i == 0 {
			accessible("the page after an action")
			shoot("console-approved.png")
		}
	}

	// 5. Keyboard only: Tab from the top reaches the skip link, then the
	// page tabs in order.
	open(srv.URL+"/console", http.StatusOK)
	var stops []string
	for range 7 {
		if err := chromedp.Do(bctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		stops = append(stops, eval(`document.activeElement.textContent.trim()`))
	}
	if want := []string{"Skip to the main content", "Overview", "Catalog", "Pins", "People", "Audit", "Config"}; !slices.Equal(stops, want) {
		t.Errorf("Tab order %q, want %q", stops, want)
	}

	// 6. Someone who is not an admin sees a refusal, not the console.
	open(outsiderSrv.URL+"/console", http.StatusForbidden)
	if got := eval(`document.querySelector("h1").textContent`); got != "Admins only" {
		t.Errorf("the outsider sees %q", got)
	}
	accessible("the outsider's refusal")

	cancelBrowser()
	consoleWG.Wait()
	for _, m := range console {
		if strings.Contains(m, "Content Security Policy") || strings.HasPrefix(m, "exception") {
			t.Errorf("browser console: %s", m)
		} else {
			t.Logf("browser console: %s", m)
		}
	}
}

package connections

import (
	"context"
	"fmt"
	"log/slog"
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
	"github.com/chromedp/chromedp/kb"
)

// e2eGate skips the browser test when SWITCHBOARD_E2E=off or in -short mode,
// and returns how to report a missing browser: a skip, or a failure under
// SWITCHBOARD_E2E=require (as in CI). The same convention as
// cmd/switchboard's e2e tests.
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

// serveFixture starts the page on httptest over fakes: alice is signed in,
// an admin or not.
func serveFixture(t *testing.T, admin bool) (*httptest.Server, *fakeGrants) {
	t.Helper()
	grants := &fakeGrants{conns: map[string][]Connection{alice: sampleConnections()}}
	p, err := New(Options{
		Grants:  grants,
		Status:  sampleStatus(),
		CSRF:    fakeCSRF{testToken},
		User:    func(*http.Request) (string, string, bool) { return alice, "Alice Example", true },
		IsAdmin: func(*http.Request) bool { return admin },
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.now = fixedNow
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, grants
}

// focused describes the element that has the focus: its tag, its text (a
// button's includes its visually hidden upstream title) and, for a button in
// a form, the upstream the form names.
const focused = `(() => {
	const a = document.activeElement;
	if (!a || a === document.body) return "body";
	const up = a.form && a.form.elements.upstream ? " [" + a.form.elements.upstream.value + "]" : "";
	return a.tagName.toLowerCase() + ": " + a.textContent.trim() + up;
})()`

// TestBrowser opens the page in headless Chromium, moves through it with the
// keyboard alone, disconnects GitHub with Tab and Enter, and saves
// screenshots for the docs.
func TestBrowser(t *testing.T) {
	missing := e2eGate(t)
	exe, err := findBrowser()
	if err != nil {
		missing("%v: run .ci/setup (Debian's chromium)", err)
	}
	dir := screenshotDir(t)
	userSrv, _ := serveFixture(t, false)
	adminSrv, adminGrants := serveFixture(t, true)

	// The timeout bounds a hung browser; nothing is timed against it.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.WindowSize(1280, 800),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root, and CI runs as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// Collect what the page and the browser log (a CSP violation is logged
	// there), from before the first navigation until the browser closes.
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
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
	// tabs presses Tab until stop reports true of the focused element, or
	// the focus comes back to where it started, and returns each stop.
	tabs := func(stop func(string) bool) []string {
		t.Helper()
		var seen []string
		for range 30 {
			if err := chromedp.Do(bctx, chromedp.KeyEvent(kb.Tab)); err != nil {
				t.Fatal(err)
			}
			f := eval(focused)
			if slices.Contains(seen, f) || f == "body" {
				return seen
			}
			seen = append(seen, f)
			if stop(f) {
				return seen
			}
		}
		t.Fatalf("30 Tabs and the focus never came round: %q", seen)
		return nil
	}

	// fits checks that no table runs past its card's padding.
	fits := func(where string) {
		t.Helper()
		const js = `String([...document.querySelectorAll(".card table")].every(t => {
			const c = t.closest(".card");
			return t.getBoundingClientRect().right <= c.getBoundingClientRect().right - parseFloat(getComputedStyle(c).paddingRight) + 0.5;
		}))`
		if ok := eval(js); ok != "true" {
			t.Errorf("%s: a table is wider than its card", where)
		}
	}

	// 1. A person who is not an admin: their connections, no status view.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(userSrv.URL+"/connections"),
		chromedp.WaitVisible(chromedp.CSS("table.connections")),
	); err != nil {
		t.Fatal(err)
	}
	// The stylesheet loaded under the page's CSP (the banner's dark
	// background comes only from it).
	if bg := eval(`getComputedStyle(document.querySelector(".banner")).backgroundColor`); bg != "rgb(36, 41, 47)" {
		t.Errorf("banner background %q: the stylesheet did not apply", bg)
	}
	if n := eval(`String(document.querySelectorAll("aside").length)`); n != "0" {
		t.Errorf("the status view is shown to a non-admin (%s asides)", n)
	}
	fits("the user's page")
	shoot("connections-user.png")

	// Every control is reached with Tab, in reading order, with a name that
	// says which upstream it acts on.
	order := tabs(func(string) bool { return false })
	want := []string{
		"a: Skip to the main content",
		"button: Disconnect GitHub [github]",
		"a: Connect Linear",
		"button: Disconnect Jira Cloud [jira]",
	}
	if !slices.Equal(order, want) {
		t.Errorf("Tab order:\n got %q\nwant %q", order, want)
	}

	// 2. An admin: the status view beside the connections.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(adminSrv.URL+"/connections"),
		chromedp.WaitVisible(chromedp.CSS("aside.status")),
	); err != nil {
		t.Fatal(err)
	}
	if got := eval(`document.querySelector(".count").textContent`); got != "57 tools in the catalog" {
		t.Errorf("catalog count %q", got)
	}
	fits("the admin's page")
	shoot("connections-admin.png")

	// 3. Keyboard only: Tab to GitHub's disconnect button, see its focus
	// ring, press Enter.
	tabs(func(f string) bool { return strings.HasSuffix(f, "[github]") })
	if f := eval(focused); f != "button: Disconnect GitHub [github]" {
		t.Fatalf("focus on %q, want GitHub's disconnect button", f)
	}
	if ring := eval(`(s => s.outlineStyle + " " + s.outlineWidth)(getComputedStyle(document.activeElement))`); ring != "solid 3px" {
		t.Errorf("the focused button's outline is %q, want a visible 3px ring", ring)
	}
	shoot("connections-focus.png")
	if err := chromedp.Do(bctx,
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`p.flash[role="status"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := adminGrants.disconnects(); !slices.Equal(got, []string{alice + " github"}) {
		t.Fatalf("disconnects after Enter: %q", got)
	}
	if loc := eval(`location.pathname + location.search`); loc != "/connections?flash=disconnected" {
		t.Errorf("after the disconnect the browser is at %q", loc)
	}
	if got := eval(`document.querySelector("p.flash").textContent`); !strings.HasPrefix(got, "Disconnected.") {
		t.Errorf("flash %q", got)
	}
	if got := eval(`document.querySelector("table.connections tbody tr").textContent`); !strings.Contains(got, "Not connected") {
		t.Errorf("GitHub's row after the disconnect: %q", got)
	}
	fits("the page after the disconnect")
	shoot("connections-disconnected.png")

	// 4. A narrow screen (a phone): the tables become stacked rows.
	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(userSrv.URL+"/connections"),
		chromedp.WaitVisible(chromedp.CSS("table.connections")),
	); err != nil {
		t.Fatal(err)
	}
	if w := eval(`String(document.documentElement.scrollWidth <= window.innerWidth)`); w != "true" {
		t.Errorf("the page scrolls sideways at 390px")
	}
	fits("the narrow page")
	shoot("connections-narrow.png")

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

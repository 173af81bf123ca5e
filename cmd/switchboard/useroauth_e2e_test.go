package main

// End-to-end proof of per-user upstream OAuth (issue 17) through the real binary, with real peers only:
//
//   - two npm oidc-provider instances (testdata/oauth/authcode-provider.mjs): the gateway's identity provider,
//     which signs the MCP clients and the browsers in, and the upstream's authorization server;
//   - the upstream is a Go MCP server (newOAuthUpstream) that requires that authorization server's tokens,
//     verified with go-oidc; its tool whoami returns the token's subject;
//   - the MCP clients are the official TypeScript SDK (testdata/e2e/useroauth.mjs), driven step by step over
//     stdin/stdout so that the test can open the links the gateway elicits between the steps;
//   - the browsers are headless Chromium driven by chromedp, one browser context per person;
//   - the replicas share a real redis-server, behind a small Go reverse proxy at their publicURL that steers
//     the sign-in and connect callbacks to the second replica.
//
// TestE2EUserOAuth's subtests run in order, on one gateway (in memory) and then on two replicas:
//
//  1. alice sees the stand-in whoami__connect; her call fails with -32042 (the SDK's
//     UrlElicitationRequiredError) and a /connect/ link; her browser signs in at both providers; her session hears
//     notifications/elicitation/complete for that elicitation; her retry goes through, the gateway lists the
//     upstream through her session, she hears list_changed, and whoami__whoami answers "alice".
//  2. bob sees whoami__whoami (the cached list), is elicited, connects, and the upstream sees bob, not alice.
//  3. alice disconnects with /connections' form (screenshots before and after); the authorization server revokes
//     the grant (RFC 7009); her next call elicits again; bob's browser opening her link gets 403 and kills it (410
//     for alice); a fresh call gives her a new link that works.
//  4. the admin API revokes bob's grant alone: bob's next call elicits, alice's still works.
//  5. bob's client without elicitation.url gets an isError result whose text holds a link that works.
//  6. the admin API revokes the whole upstream (2 grants); both are elicited; alice reconnects with the
//     /connections page's connect button.
//  7. two replicas on Redis: the client is on replica 1, the sign-in and connect callbacks land on replica 2, and
//     replica 1's session still hears the completion and its retried call succeeds.
//
// Nothing waits on a sleep: every wait is for an event (a reply or a notification of the script, a page of the
// browser, a process's readiness), bounded by a guard. The one poll is for the authorization server's log after a
// disconnect, which has no event to wait for.
//
// Screenshots of the pages a person sees (the connect result, the wrong-account refusal, /connections before and
// after a disconnect) go to $SWITCHBOARD_SCREENSHOTS when set (the docs take them from there), else to a
// directory of the test's own.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
)

// userOAuthGuard bounds the whole test: a hung browser, provider or gateway fails it instead of hanging it.
// Nothing is timed against it.
const userOAuthGuard = 3 * time.Minute

// userOAuthStep bounds one browser step (a page to appear, a click to land): a failure guard, so that a page
// the test did not expect is reported with its location and text rather than at the end of the guard.
const userOAuthStep = 30 * time.Second

// scriptWait bounds one answer or event of the script: a failure guard, so that one step that never happens
// fails its subtest and leaves the others their time.
const scriptWait = 40 * time.Second

// userOAuthUpstream is the upstream's name in the gateway's config, and so the prefix of its tools.
const userOAuthUpstream = "whoami"

func TestE2EUserOAuth(t *testing.T) {
	missing := e2eGate(t)
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "oidc-provider", "package.json")); err != nil {
		missing("Node peer oidc-provider not installed: run .ci/setup in %s", root)
	}
	providerNode, err := node22(root)
	if err != nil {
		missing("no Node 22 for oidc-provider: %v", err)
	}
	node, everythingJS, _ := nodePeers(t, root, missing)
	chromium, err := findChromium()
	if err != nil {
		missing("%v: run .ci/setup (Debian's chromium)", err)
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), userOAuthGuard)
	defer cancel()
	bin := buildSwitchboard(t)
	tmp := t.TempDir()
	shots := upstreamScreenshotDir(t)

	// 1. Addresses known before anything starts: the gateway's public URL is the audience its identity
	// provider issues tokens for, and the replicas' proxy is another.
	gwListen, gwAdmin := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	publicURL := "http://" + gwListen
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxyLn.Close() })
	proxyURL := "http://" + proxyLn.Addr().String()

	// 2. The upstream and its authorization server (consent given at once), the gateway's identity provider
	// (a consent page, as browserLogin expects), and the gateway's sign-in client there, registered by RFC 7591
	// for both gateways' callbacks.
	up := newOAuthUpstream(t)
	as := startAuthcodeProvider(ctx, t, root, providerNode, "auto", up.URL)
	up.start(ctx, t, as.Issuer, "mcp")
	idp := startAuthcodeProvider(ctx, t, root, providerNode, "page", publicURL+"/mcp", proxyURL+"/mcp")
	signInID, signInSecret := registerSignInClient(ctx, t, idp.Issuer, publicURL+"/auth/callback", proxyURL+"/auth/callback")
	env := []string{"BROWSER_CLIENT_SECRET=" + signInSecret, "SWITCHBOARD_TOKEN_KEYS=" + newTokenKeys(t)}

	// 3. The gateway, in memory.
	gw := startUserOAuthGateway(ctx, t, bin, tmp, "switchboard", gwListen, gwAdmin,
		userOAuthConfig(gwListen, publicURL, idp.Issuer, signInID, up.URL, "console: {enabled: true}\n"), env)

	// 4. The browser, and the MCP clients' tokens: an authorization-code grant with PKCE at the identity
	// provider, for the gateway's audience, found from the gateway's own 401 and metadata.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses root, and CI runs as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	cb := newCallbackServer(t)
	tokens := newGatewayTokens(ctx, t, publicURL+"/mcp", cb)
	aliceToken, bobToken := tokens.get(ctx, t, bctx, "alice"), tokens.get(ctx, t, bctx, "bob")

	// 5. The TypeScript SDK's sessions, and each person's browser.
	js := startUserOAuthScript(ctx, t, node, root, publicURL+"/mcp")
	alice, bob := newPerson(t, bctx, "alice"), newPerson(t, bctx, "bob")
	whoamiTool, connectTool := userOAuthUpstream+"__whoami", userOAuthUpstream+"__connect"
	t.Logf("set up in %v", time.Since(started).Round(time.Millisecond))

	t.Run("1_alice_connects_in_band", func(t *testing.T) {
		js.connect(ctx, t, "alice", aliceToken, true)
		if got := js.list(ctx, t, "alice"); !slices.Equal(got, []string{connectTool}) {
			t.Fatalf("before anyone connected, tools/list = %q; want the one stand-in %s", got, connectTool)
		}
		mark := js.mark()
		el := js.callElicits(ctx, t, "alice", connectTool, publicURL)
		land := alice.follow(t, el.URL)
		land.want(t, http.StatusOK, "Connected")
		alice.shoot(t, shots, "user-oauth-connected.png")
		js.waitEvent(ctx, t, mark, "alice's notifications/elicitation/complete", func(e scriptEvent) bool {
			return e.Event == "elicitation-complete" && e.Client == "alice" && e.ElicitationID == el.ElicitationID
		})
		// The client retries the elicited request, as the spec has it; it goes through now, and the gateway lists
		// the upstream through alice's session for everyone's catalog.
		if r := js.call(ctx, t, "alice", connectTool); r.Result == nil || r.Result.IsError {
			t.Fatalf("alice's retried %s: %s", connectTool, r.describe())
		} else {
			t.Logf("alice's retried %s: %q", connectTool, r.Result.Text)
		}
		js.waitEvent(ctx, t, mark, "alice's notifications/tools/list_changed", func(e scriptEvent) bool {
			return e.Event == "tools-changed" && e.Client == "alice"
		})
		if got := js.list(ctx, t, "alice"); !slices.Contains(got, whoamiTool) || slices.Contains(got, connectTool) {
			t.Fatalf("after alice connected, tools/list = %q; want the upstream's %s and no stand-in", got, whoamiTool)
		}
		if got := js.callText(ctx, t, "alice", whoamiTool); got != "alice" {
			t.Fatalf("alice's retried call: whoami = %q, want alice", got)
		}
	})

	t.Run("2_bob_reaches_the_upstream_as_bob", func(t *testing.T) {
		js.connect(ctx, t, "bob", bobToken, true)
		if got := js.list(ctx, t, "bob"); !slices.Contains(got, whoamiTool) {
			t.Fatalf("bob, not connected, does not see the cached list: tools/list = %q", got)
		}
		mark := js.mark()
		el := js.callElicits(ctx, t, "bob", whoamiTool, publicURL)
		bob.follow(t, el.URL).want(t, http.StatusOK, "Connected")
		js.waitEvent(ctx, t, mark, "bob's notifications/elicitation/complete", func(e scriptEvent) bool {
			return e.Event == "elicitation-complete" && e.Client == "bob" && e.ElicitationID == el.ElicitationID
		})
		if got := js.callText(ctx, t, "bob", whoamiTool); got != "bob" {
			t.Fatalf("bob's call: whoami = %q, want bob (the upstream must see bob's own token)", got)
		}
		if got := js.callText(ctx, t, "alice", whoamiTool); got != "alice" {
			t.Fatalf("alice's call after bob connected: whoami = %q, want alice", got)
		}
		if e, ok := js.find(0, func(e scriptEvent) bool {
			return e.Event == "elicitation-complete" && e.Client == "alice" && e.ElicitationID == el.ElicitationID
		}); ok {
			t.Errorf("bob's completion reached alice's session: %+v", e)
		}
	})

	t.Run("3_disconnect_then_the_wrong_browser_is_refused", func(t *testing.T) {
		// alice's page: her connection, and the status view (she is an admin by auth.browser.admins).
		alice.openConnections(t, publicURL)
		if got := alice.connectionStatus(t, userOAuthUpstream); !strings.Contains(got, "Connected") || strings.Contains(got, "Not connected") {
			t.Fatalf("alice's /connections shows %s as %q, want Connected", userOAuthUpstream, got)
		}
		if n := alice.eval(t, `String(document.querySelectorAll("aside.status").length)`); n != "1" {
			t.Errorf("alice, an admin, sees %s status views", n)
		}
		alice.shoot(t, shots, "user-oauth-connections.png")
		revoked := strings.Count(as.log.String(), "grant revoked:")

		// Disconnect with the page's own form.
		if err := alice.do(
			chromedp.Click(chromedp.CSS(`form:has(input[name="upstream"][value="`+userOAuthUpstream+`"]) button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`p.flash[role="status"]`)),
		); err != nil {
			t.Fatalf("disconnecting on /connections: %v\n%s", err, alice.where())
		}
		if got := alice.connectionStatus(t, userOAuthUpstream); !strings.Contains(got, "Not connected") {
			t.Fatalf("after the disconnect /connections shows %s as %q, want Not connected", userOAuthUpstream, got)
		}
		alice.shoot(t, shots, "user-oauth-connections-disconnected.png")
		// RFC 7009: the gateway revoked the refresh token at the authorization server, which revokes the grant.
		// The provider's log is the only witness, and it has no event to wait for: poll it, bounded.
		if !pollUntil(ctx, func() bool { return strings.Count(as.log.String(), "grant revoked:") > revoked }) {
			t.Errorf("the disconnect revoked nothing at the authorization server (RFC 7009):\n%s", as.log.tail(20))
		}

		// bob's page shows his own connection and no status view.
		bob.openConnections(t, publicURL)
		if got := bob.connectionStatus(t, userOAuthUpstream); !strings.Contains(got, "Connected") || strings.Contains(got, "Not connected") {
			t.Errorf("bob's /connections shows %s as %q after alice disconnected; bob is still connected", userOAuthUpstream, got)
		}
		if n := bob.eval(t, `String(document.querySelectorAll("aside").length)`); n != "0" {
			t.Errorf("bob, not an admin, sees %s status views", n)
		}

		// alice's next call elicits again; bob opening her link is refused and kills it.
		stale := js.callElicits(ctx, t, "alice", whoamiTool, publicURL)
		bob.follow(t, stale.URL).want(t, http.StatusForbidden, "Wrong account")
		bob.shoot(t, shots, "user-oauth-wrong-account.png")
		alice.follow(t, stale.URL).want(t, http.StatusGone, "Link expired")
		if got := js.callText(ctx, t, "bob", whoamiTool); got != "bob" {
			t.Errorf("bob's own grant after he opened alice's link: whoami = %q", got)
		}

		// A fresh call gives alice a new link, which works.
		mark := js.mark()
		fresh := js.callElicits(ctx, t, "alice", whoamiTool, publicURL)
		if fresh.URL == stale.URL || fresh.ElicitationID == stale.ElicitationID {
			t.Fatalf("the new elicitation repeats the refused one: %+v", fresh)
		}
		alice.follow(t, fresh.URL).want(t, http.StatusOK, "Connected")
		js.waitEvent(ctx, t, mark, "alice's completion of the new link", func(e scriptEvent) bool {
			return e.Event == "elicitation-complete" && e.Client == "alice" && e.ElicitationID == fresh.ElicitationID
		})
		if got := js.callText(ctx, t, "alice", whoamiTool); got != "alice" {
			t.Fatalf("alice after reconnecting: whoami = %q", got)
		}
		if e, ok := js.find(0, func(e scriptEvent) bool {
			return e.Event == "elicitation-complete" && e.ElicitationID == stale.ElicitationID
		}); ok {
			t.Errorf("the refused link's elicitation was completed: %+v", e)
		}
	})

	t.Run("4_admin_revokes_bobs_grant", func(t *testing.T) {
		if n := revokeGrants(ctx, t, "http://"+gwAdmin, fmt.Sprintf(`{"upstream":%q,"principal":%q}`, userOAuthUpstream, idp.Issuer+"|bob")); n != 1 {
			t.Fatalf("revoking bob's grant: revoked %d, want 1", n)
		}
		js.callElicits(ctx, t, "bob", whoamiTool, publicURL)
		if got := js.callText(ctx, t, "alice", whoamiTool); got != "alice" {
			t.Fatalf("alice after bob's grant was revoked: whoami = %q", got)
		}
	})

	t.Run("5_client_without_url_elicitation_gets_the_link_as_text", func(t *testing.T) {
		// bob has no grant now; a client of his that declared no URL elicitation (form only).
		js.connect(ctx, t, "bob-plain", bobToken, false)
		r := js.call(ctx, t, "bob-plain", whoamiTool)
		if r.Error != nil || r.Result == nil || !r.Result.IsError {
			t.Fatalf("a client without elicitation.url: %s; want a tool result with isError", r.describe())
		}
		link := regexp.MustCompile(regexp.QuoteMeta(publicURL) + `/connect/[A-Za-z0-9_-]+`).FindString(r.Result.Text)
		if link == "" {
			t.Fatalf("the isError result holds no %s/connect/ link: %q", publicURL, r.Result.Text)
		}
		t.Logf("the text a person reads: %q", r.Result.Text)
		bob.follow(t, link).want(t, http.StatusOK, "Connected")
		if got := js.callText(ctx, t, "bob-plain", whoamiTool); got != "bob" {
			t.Fatalf("bob after following the text's link: whoami = %q", got)
		}
		if got := js.callText(ctx, t, "bob", whoamiTool); got != "bob" {
			t.Fatalf("bob's other session after he connected: whoami = %q", got)
		}
	})

	t.Run("6_admin_revokes_the_whole_upstream_then_the_page_connects", func(t *testing.T) {
		if n := revokeGrants(ctx, t, "http://"+gwAdmin, fmt.Sprintf(`{"upstream":%q}`, userOAuthUpstream)); n != 2 {
			t.Fatalf("revoking every grant of %s: revoked %d, want 2 (alice's and bob's)", userOAuthUpstream, n)
		}
		js.callElicits(ctx, t, "alice", whoamiTool, publicURL)
		js.callElicits(ctx, t, "bob", whoamiTool, publicURL)

		// alice connects again from /connections, with the page's connect button (GET /connect/start/whoami).
		alice.openConnections(t, publicURL)
		if got := alice.connectionStatus(t, userOAuthUpstream); !strings.Contains(got, "Not connected") {
			t.Fatalf("after the whole upstream was revoked alice's /connections shows %s as %q", userOAuthUpstream, got)
		}
		alice.click(t, `table.connections a[href$="/connect/start/`+userOAuthUpstream+`"]`).want(t, http.StatusOK, "Connected")
		if got := js.callText(ctx, t, "alice", whoamiTool); got != "alice" {
			t.Fatalf("alice after connecting from the page: whoami = %q", got)
		}
	})

	t.Run("6b_the_console_is_for_admins", func(t *testing.T) {
		// bob, signed in but not in auth.browser.admins, gets the refusal and nothing of the gateway.
		bob.follow(t, publicURL+"/console").want(t, http.StatusForbidden, "Admins only")
		// alice, an admin, sees her own grant on the people page, and revokes it there.
		if err := alice.do(chromedp.Navigate(publicURL+"/console/people"), chromedp.WaitVisible(chromedp.CSS(`form[action$="/people/revoke"] button`))); err != nil {
			t.Fatalf("alice: /console/people: %v\n%s", err, alice.where())
		}
		if got := alice.eval(t, `document.querySelector("main table").textContent`); !strings.Contains(got, "alice") || !strings.Contains(got, "mcp") {
			t.Errorf("alice's people page shows %q; want her grant with its scope mcp", got)
		}
		alice.shoot(t, shots, "console-live-people.png")
		if err := alice.do(chromedp.Click(chromedp.CSS(`form[action$="/people/revoke"] button`)), chromedp.WaitVisible(chromedp.CSS("p.flash"))); err != nil {
			t.Fatalf("alice: revoking on /console/people: %v\n%s", err, alice.where())
		}
		if got := alice.eval(t, `document.querySelector("p.flash").textContent`); !strings.HasPrefix(got, "Revoked.") {
			t.Errorf("after the revocation the flash says %q", got)
		}
		js.callElicits(ctx, t, "alice", whoamiTool, publicURL) // the grant is gone: the next call asks to connect
	})

	t.Run("6c_the_console_signs_in_without_user_oauth", func(t *testing.T) {
		// A gateway with auth.browser and no user-oauth upstream: the console runs the sign-in itself.
		listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		base := "http://" + listen
		id, secret := registerSignInClient(ctx, t, idp.Issuer, base+"/auth/callback")
		cfg := fmt.Sprintf(`listen: %q
publicURL: %q
console: {enabled: true}
auth:
  issuer: %q
  audience: %q
  browser: {clientId: %q, clientSecret: "${BROWSER_CLIENT_SECRET}", admins: {sub: [alice]}}
  tokenKeys: "${SWITCHBOARD_TOKEN_KEYS}"
upstreams:
  - {name: everything, command: %q, args: [%q, "stdio"]}
`, listen, base, idp.Issuer, base+"/mcp", id, node, everythingJS)
		startUserOAuthGateway(ctx, t, bin, tmp, "console-only", listen, fmt.Sprintf("127.0.0.1:%d", freePort(t)), cfg,
			[]string{"BROWSER_CLIENT_SECRET=" + secret, "SWITCHBOARD_TOKEN_KEYS=" + newTokenKeys(t)})
		alice.follow(t, base+"/console").want(t, http.StatusOK, "Overview")
		if got := alice.eval(t, `document.querySelector("main table").textContent`); !strings.Contains(got, "everything") {
			t.Errorf("alice's overview shows %q; want the upstream everything", got)
		}
		bob.follow(t, base+"/console/config").want(t, http.StatusForbidden, "Admins only")
	})

	t.Run("7_callback_on_a_second_replica", func(t *testing.T) {
		redisAddr := startRedisServer(t) // skips without redis-server, as the other replica tests do
		shared := fmt.Sprintf("cursorSecret: \"user-oauth-e2e-cursor-secret-0123456789abcdef\"\nredis: {url: \"redis://%s\"}\n", redisAddr)
		var replicas [2]*process
		var bases [2]string
		for i := range replicas {
			listen, admin := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
			bases[i] = "http://" + listen
			extra := shared + fmt.Sprintf("replicaURL: %q\n", bases[i]+"/mcp")
			replicas[i] = startUserOAuthGateway(ctx, t, bin, tmp, fmt.Sprintf("replica-%d", i+1), listen, admin,
				userOAuthConfig(listen, proxyURL, idp.Issuer, signInID, up.URL, extra), env)
		}
		proxy := serveSteeringProxy(t, proxyLn, bases[0], bases[1])

		tokens2 := newGatewayTokens(ctx, t, proxyURL+"/mcp", cb)
		token := tokens2.get(ctx, t, bctx, "alice")
		// The client talks to replica 1; the browser comes through the proxy at publicURL.
		js2 := startUserOAuthScript(ctx, t, node, root, bases[0]+"/mcp")
		js2.connect(ctx, t, "alice", token, true)
		if got := js2.list(ctx, t, "alice"); !slices.Equal(got, []string{connectTool}) {
			t.Fatalf("a fresh state store: tools/list = %q; want the stand-in %s", got, connectTool)
		}
		mark := js2.mark()
		el := js2.callElicits(ctx, t, "alice", connectTool, proxyURL)
		alice2 := newPerson(t, bctx, "alice") // a browser that never signed in to these replicas
		alice2.follow(t, el.URL).want(t, http.StatusOK, "Connected")
		for _, want := range []string{"replica-2 /connect/callback", "replica-2 /auth/callback", "replica-1 /connect/"} {
			if !proxy.saw(want) {
				t.Errorf("the proxy never sent %s: %v", want, proxy.seen())
			}
		}
		if strings.Contains(replicas[0].log.String(), "connect: connected") || !strings.Contains(replicas[1].log.String(), "connect: connected") {
			t.Errorf("the connection was not completed by replica 2 alone")
		}
		js2.waitEvent(ctx, t, mark, "the completion, on replica 1, of a callback replica 2 served", func(e scriptEvent) bool {
			return e.Event == "elicitation-complete" && e.Client == "alice" && e.ElicitationID == el.ElicitationID
		})
		if r := js2.call(ctx, t, "alice", connectTool); r.Result == nil || r.Result.IsError {
			t.Fatalf("alice's retried %s on replica 1: %s", connectTool, r.describe())
		}
		js2.waitEvent(ctx, t, mark, "replica 1's notifications/tools/list_changed", func(e scriptEvent) bool {
			return e.Event == "tools-changed" && e.Client == "alice"
		})
		if got := js2.callText(ctx, t, "alice", whoamiTool); got != "alice" {
			t.Fatalf("the retried call on replica 1: whoami = %q, want alice", got)
		}
		for i, p := range replicas {
			if strings.Contains(p.log.String(), "eyJ") || strings.Contains(p.log.String(), token) {
				t.Errorf("replica %d's log holds a token", i+1)
			}
		}
	})

	// No token in the gateway's log: not the clients', and no JWT (the upstream's tokens are JWTs).
	for _, tok := range []string{aliceToken, bobToken} {
		if strings.Contains(gw.log.String(), tok) {
			t.Error("the gateway's log holds a client's token")
		}
	}
	if strings.Contains(gw.log.String(), "eyJ") {
		t.Error("the gateway's log holds something that looks like a JWT")
	}
	t.Logf("per-user upstream OAuth proven in %v", time.Since(started).Round(time.Millisecond))
}

// userOAuthConfig is a gateway's config: auth at the identity provider with the browser sign-in, one user-oauth
// upstream, and extra top-level lines (redis for the replicas).
func userOAuthConfig(listen, publicURL, issuer, signInID, upstreamURL, extra string) string {
	return fmt.Sprintf(`# generated by TestE2EUserOAuth
listen: %[1]q
publicURL: %[2]q
%[6]sauth:
  issuer: %[3]q
  audience: %[7]q
  browser:
    clientId: %[4]q
    clientSecret: "${BROWSER_CLIENT_SECRET}"
    admins: {sub: [alice]}
  tokenKeys: "${SWITCHBOARD_TOKEN_KEYS}"
upstreams:
  - name: %[8]s
    url: %[5]q
    auth:
      type: user-oauth
      scopes: [mcp]
`, listen, publicURL, issuer, signInID, upstreamURL, extra, publicURL+"/mcp", userOAuthUpstream)
}

// startUserOAuthGateway writes config and serves it (with the admin API on admin), ready when /readyz says so.
// Under SWITCHBOARD_E2E_RACE=1 a race report in its log fails the test.
func startUserOAuthGateway(ctx context.Context, t *testing.T, bin, dir, name, listen, admin, config string, env []string) *process {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s config:\n%s", name, config)
	var p *process
	if os.Getenv("SWITCHBOARD_E2E_RACE") == "1" {
		// Registered first, so that it runs after the gateway's own cleanup and sees its whole log.
		t.Cleanup(func() {
			if p != nil && strings.Contains(p.log.String(), "WARNING: DATA RACE") {
				t.Errorf("the race detector reported a data race in %s; see the [%s] log lines", name, name)
			}
		})
	}
	p = startProcess(t, name, dir, env, bin, "serve", "--config", path, "--admin-listen", admin)
	if err := waitReady(ctx, "http://"+listen+"/readyz", e2eReadyTimeout, p); err != nil {
		t.Fatalf("%s did not become ready: %v\n--- log (tail):\n%s", name, err, p.log.tail(60))
	}
	return p
}

// newTokenKeys is an auth.tokenKeys value: one key, id k1, 32 random bytes.
func newTokenKeys(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "k1:" + base64.StdEncoding.EncodeToString(key)
}

// registerSignInClient registers the gateway's browser sign-in client at the identity provider by RFC 7591: a
// confidential client (client_secret_basic) of the authorization-code grant, for the redirect URIs given.
func registerSignInClient(ctx context.Context, t *testing.T, issuer string, redirectURIs ...string) (id, secret string) {
	t.Helper()
	var meta struct {
		RegistrationEndpoint string `json:"registration_endpoint"`
	}
	getJSONInto(ctx, t, issuer+"/.well-known/openid-configuration", &meta)
	if meta.RegistrationEndpoint == "" {
		t.Fatalf("%s advertises no registration_endpoint", issuer)
	}
	body, err := json.Marshal(map[string]any{
		"client_name":                "Switchboard e2e browser sign-in",
		"redirect_uris":              redirectURIs,
		"grant_types":                []string{"authorization_code"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "client_secret_basic",
		"scope":                      "openid",
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("registering the sign-in client: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &reg) != nil || reg.ClientID == "" || reg.ClientSecret == "" {
		t.Fatalf("registering the sign-in client: HTTP %d %s", resp.StatusCode, raw)
	}
	return reg.ClientID, reg.ClientSecret
}

func getJSONInto(ctx context.Context, t *testing.T, u string, dst any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// gatewayTokens gets MCP clients their access tokens for a gateway as an MCP client would: the gateway's 401
// challenge, its RFC 9728 metadata, the identity provider's metadata, an RFC 7591 public client, and the
// authorization-code grant with PKCE and resource = the gateway's audience, signed in in Chromium.
type gatewayTokens struct {
	flow *upstreamauth.Flow
	cb   *callbackServer
}

func newGatewayTokens(ctx context.Context, t *testing.T, mcpURL string, cb *callbackServer) *gatewayTokens {
	t.Helper()
	ch, ok := upstreamauth.ParseChallenge(unauthorizedChallenge(ctx, t, mcpURL))
	if !ok || ch.ResourceMetadata == "" {
		t.Fatalf("the gateway's 401 at %s has no resource_metadata challenge: %+v", mcpURL, ch)
	}
	srv, err := upstreamauth.Discover(ctx, nil, mcpURL, ch)
	if err != nil {
		t.Fatalf("discovering the gateway's authorization server from %s: %v", mcpURL, err)
	}
	scopes := []string{"mcp"}
	client, err := upstreamauth.Register(ctx, nil, srv, upstreamauth.Registration{
		Name: "Switchboard e2e MCP client", RedirectURIs: []string{cb.URL}, Scopes: scopes,
	})
	if err != nil {
		t.Fatalf("registering the MCP client: %v", err)
	}
	flow, err := upstreamauth.NewFlow(upstreamauth.FlowConfig{Server: srv, Client: client, RedirectURL: cb.URL, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return &gatewayTokens{flow: flow, cb: cb}
}

// get signs user in, in a fresh browser context, and returns the access token.
func (g *gatewayTokens) get(ctx context.Context, t *testing.T, bctx context.Context, user string) string {
	t.Helper()
	pending, authURL := g.flow.Start()
	q := browserLogin(ctx, t, bctx, g.cb, authURL, user, nil)
	tok, err := g.flow.Finish(ctx, pending, q)
	if err != nil {
		t.Fatalf("%s's token for the gateway: %v", user, err)
	}
	if claims := jwtClaims(t, tok.AccessToken); claims["sub"] != user {
		t.Fatalf("%s's token for the gateway has sub %v", user, claims["sub"])
	}
	return tok.AccessToken
}

// revokeGrants posts to the admin API's POST /admin/grants/revoke and returns its count.
func revokeGrants(ctx context.Context, t *testing.T, admin, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, admin+"/admin/grants/revoke", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /admin/grants/revoke: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var v struct {
		Revoked *int `json:"revoked"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &v) != nil || v.Revoked == nil {
		t.Fatalf("POST /admin/grants/revoke %s: HTTP %d %s", body, resp.StatusCode, raw)
	}
	return *v.Revoked
}

// pollUntil polls cond every 50ms until it holds or ctx ends; only for what has no event to wait for.
func pollUntil(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// steeringProxy is the replicas' publicURL: the sign-in and connect callbacks go to the second replica, every
// other request to the first. It remembers where each request went.
type steeringProxy struct {
	mu   sync.Mutex
	hits []string // "replica-N /path"
}

func serveSteeringProxy(t *testing.T, ln net.Listener, first, second string) *steeringProxy {
	t.Helper()
	u1, err := url.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := url.Parse(second)
	if err != nil {
		t.Fatal(err)
	}
	sp := &steeringProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target, name := u1, "replica-1"
			if p := pr.In.URL.Path; p == "/connect/callback" || p == "/auth/callback" {
				target, name = u2, "replica-2"
			}
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the browser's Host: the public one
			sp.mu.Lock()
			sp.hits = append(sp.hits, name+" "+pr.In.URL.Path)
			sp.mu.Unlock()
		},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sp
}

// saw reports whether a request went where prefix says ("replica-2 /connect/callback").
func (sp *steeringProxy) saw(prefix string) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.ContainsFunc(sp.hits, func(h string) bool { return strings.HasPrefix(h, prefix) })
}

func (sp *steeringProxy) seen() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.hits)
}

// person is one person's browser: a browser context of its own (its own cookies), which records the HTTP
// status of every document it loads.
type person struct {
	name string
	ctx  context.Context

	mu     sync.Mutex
	status map[string]int64 // document URL → status
}

func newPerson(t *testing.T, bctx context.Context, name string) *person {
	t.Helper()
	p := &person{name: name, status: map[string]int64{}}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(p.listen))
	t.Cleanup(cancel)
	p.ctx = ctx
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("%s's browser context: %v", name, err)
	}
	return p
}

// listen runs on the tab's reader goroutine: it must be quick.
func (p *person) listen(ev any) {
	if e, ok := ev.(*network.EventResponseReceived); ok && e.Type == network.ResourceTypeDocument && e.Response != nil {
		p.mu.Lock()
		p.status[e.Response.URL] = e.Response.Status
		p.mu.Unlock()
	}
}

// do runs actions in the person's tab, bounded by one step's guard (the test's guard bounds the tab too).
func (p *person) do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, userOAuthStep)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// where describes the tab's page for a failure message: its location and the start of its text.
func (p *person) where() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "").slice(0, 600)`))
	if err != nil {
		return fmt.Sprintf("(%s's page unreadable: %v)", p.name, err)
	}
	return fmt.Sprintf("%s's page: %s", p.name, v)
}

func (p *person) eval(t *testing.T, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, userOAuthStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: evaluating %s: %v", p.name, expr, err)
	}
	return v
}

func (p *person) shoot(t *testing.T, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, userOAuthStep)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// pageState matches, in a document the test has not acted on yet (html without data-e2e-left), what a person
// acts on or reads: a provider's login form, its consent button, or a page without a form (the gateway's
// result page, or any error page).
const pageState = `html:not([data-e2e-left]) #username, html:not([data-e2e-left]) #allow, html:not([data-e2e-left]) main:not(:has(form)) > h1`

// markLeft marks the current document before an action that leaves it, so that pageState waits for the next.
func markLeft() chromedp.Action[chromedp.Void] {
	eval := chromedp.Evaluate[string](`(document.documentElement.setAttribute("data-e2e-left", ""), "marked")`)
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := eval(ctx, t)
		return err
	})
}

// landing is where a followed link ended: a page without a form.
type landing struct {
	who, URL, Title string
	Status          int64
	Text            string
}

func (l landing) want(t *testing.T, status int64, title string) {
	t.Helper()
	if l.Status != status || !strings.Contains(l.Title, title) {
		t.Fatalf("%s's browser ended at %s with HTTP %d %q; want HTTP %d %q\n%s", l.who, l.URL, l.Status, l.Title, status, title, l.Text)
	}
	t.Logf("%s's browser: HTTP %d %q at %s", l.who, l.Status, l.Title, l.URL)
}

// follow opens link and does what the person would until a page without a form: signs in as themselves at each
// provider's login form, allows at a consent page.
func (p *person) follow(t *testing.T, link string) landing {
	t.Helper()
	if err := p.do(chromedp.Navigate(link)); err != nil {
		t.Fatalf("%s: opening %s: %v\n%s", p.name, link, err, p.where())
	}
	return p.through(t, link)
}

// click clicks what sel selects on the current page and goes on as follow does.
func (p *person) click(t *testing.T, sel string) landing {
	t.Helper()
	if err := p.do(markLeft(), chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("%s: clicking %s: %v\n%s", p.name, sel, err, p.where())
	}
	return p.through(t, sel)
}

// through signs in and consents until a page without a form, after link (for messages).
func (p *person) through(t *testing.T, link string) landing {
	t.Helper()
	for range 12 {
		if err := p.do(chromedp.WaitVisible(chromedp.CSS(pageState))); err != nil {
			t.Fatalf("%s: waiting for a page after %s: %v\n%s", p.name, link, err, p.where())
		}
		switch p.eval(t, `document.querySelector("#username") ? "login" : document.querySelector("#allow") ? "consent" : "page"`) {
		case "login":
			t.Logf("%s signs in at %s", p.name, p.eval(t, "location.origin"))
			if err := p.do(chromedp.SendKeys(chromedp.CSS("#username"), p.name), markLeft(), chromedp.Click(chromedp.CSS("#submit"))); err != nil {
				t.Fatalf("%s: signing in: %v\n%s", p.name, err, p.where())
			}
		case "consent":
			if err := p.do(markLeft(), chromedp.Click(chromedp.CSS("#allow"))); err != nil {
				t.Fatalf("%s: consenting: %v\n%s", p.name, err, p.where())
			}
		default:
			l := landing{who: p.name, URL: p.eval(t, "location.href"), Title: p.eval(t, `document.querySelector("main > h1").textContent`),
				Text: p.eval(t, `document.body.innerText.slice(0, 600)`)}
			p.mu.Lock()
			l.Status = p.status[l.URL]
			p.mu.Unlock()
			return l
		}
	}
	t.Fatalf("%s: more than 12 pages after %s\n%s", p.name, link, p.where())
	return landing{}
}

// openConnections opens /connections, signed in already.
func (p *person) openConnections(t *testing.T, base string) {
	t.Helper()
	if err := p.do(chromedp.Navigate(base+"/connections"), chromedp.WaitVisible(chromedp.CSS("table.connections"))); err != nil {
		t.Fatalf("%s: /connections: %v\n%s", p.name, err, p.where())
	}
}

// connectionStatus is the Status cell of the upstream's row on /connections.
func (p *person) connectionStatus(t *testing.T, upstream string) string {
	t.Helper()
	return p.eval(t, fmt.Sprintf(`(() => {
	const row = [...document.querySelectorAll("table.connections tbody tr")].find(tr => tr.querySelector("th").textContent.includes(%q));
	return row ? row.querySelector('td[data-label="Status"]').textContent.trim() : "no row";
})()`, upstream))
}

// userOAuthScript is a running useroauth.mjs: commands go to its stdin, answers and events come on its stdout.
type userOAuthScript struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *lineLog
	done  chan struct{}

	mu      sync.Mutex
	seq     int
	replies map[int]chan scriptReply
	events  []scriptEvent
	wake    chan struct{} // closed and replaced at each event
}

type scriptEvent struct {
	Event         string          `json:"event"`
	Client        string          `json:"client"`
	ElicitationID string          `json:"elicitationId"`
	Message       string          `json:"message"`
	Params        json.RawMessage `json:"params"`
}

type scriptReply struct {
	Seq             int    `json:"seq"`
	OK              bool   `json:"ok"`
	Why             string `json:"why"`
	ProtocolVersion string `json:"protocolVersion"`
	Session         string `json:"session"`
	Tools           []string
	Result          *struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"result"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
		Class   string          `json:"class"`
	} `json:"error"`
}

func (r scriptReply) describe() string {
	switch {
	case r.Error != nil:
		return fmt.Sprintf("JSON-RPC error %d %q (%s) data %s", r.Error.Code, r.Error.Message, r.Error.Class, r.Error.Data)
	case r.Result != nil:
		return fmt.Sprintf("result isError=%v %q", r.Result.IsError, r.Result.Text)
	}
	return "no result"
}

// urlElicitation is one of a -32042 error's data.elicitations.
type urlElicitation struct {
	Mode          string `json:"mode"`
	ElicitationID string `json:"elicitationId"`
	URL           string `json:"url"`
	Message       string `json:"message"`
}

func startUserOAuthScript(ctx context.Context, t *testing.T, node, root, mcpURL string) *userOAuthScript {
	t.Helper()
	cmd := exec.Command(node, "useroauth.mjs", "--url", mcpURL, "--timeout", fmt.Sprint(int(userOAuthGuard/time.Second)))
	cmd.Dir = filepath.Join(root, "cmd", "switchboard", "testdata", "e2e")
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &userOAuthScript{cmd: cmd, log: &lineLog{t: t, prefix: "[useroauth.mjs] "}, done: make(chan struct{}),
		replies: map[int]chan scriptReply{}, wake: make(chan struct{})}
	cmd.Stderr = s.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start useroauth.mjs: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = s.log.Write(append(append([]byte{}, line...), '\n'))
			var head struct {
				Event string `json:"event"`
				Seq   *int   `json:"seq"`
			}
			if json.Unmarshal(line, &head) != nil {
				continue
			}
			switch {
			case head.Event != "":
				var e scriptEvent
				if json.Unmarshal(line, &e) == nil {
					s.mu.Lock()
					s.events = append(s.events, e)
					close(s.wake)
					s.wake = make(chan struct{})
					s.mu.Unlock()
				}
			case head.Seq != nil:
				var r scriptReply
				if json.Unmarshal(line, &r) == nil {
					s.mu.Lock()
					ch := s.replies[r.Seq]
					delete(s.replies, r.Seq)
					s.mu.Unlock()
					if ch != nil {
						ch <- r
					}
				}
			}
		}
		err := cmd.Wait()
		s.log.note(fmt.Sprintf("exited: %v", err))
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.stdin.Close() // the script ends its sessions and exits at the end of its input
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		s.log.close()
	})
	return s
}

// do sends one command and waits for its answer, which must be ok.
func (s *userOAuthScript) do(ctx context.Context, t *testing.T, cmd map[string]any) scriptReply {
	t.Helper()
	ch := make(chan scriptReply, 1)
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.replies[seq] = ch
	s.mu.Unlock()
	cmd["seq"] = seq
	line, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, scriptWait)
	defer cancel()
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("useroauth.mjs: sending %s: %v\n%s", cmd["cmd"], err, s.log.tail(20))
	}
	select {
	case r := <-ch:
		if !r.OK {
			t.Fatalf("useroauth.mjs: %s %v failed: %s", cmd["cmd"], cmd["client"], r.Why)
		}
		return r
	case <-s.done:
		t.Fatalf("useroauth.mjs exited during %s:\n%s", cmd["cmd"], s.log.tail(20))
	case <-ctx.Done():
		t.Fatalf("useroauth.mjs: no answer to %s %v: %v\n%s", cmd["cmd"], cmd["client"], ctx.Err(), s.log.tail(20))
	}
	return scriptReply{}
}

// connect opens a session of client with token, declaring elicitation {url: {}} when urlElicitation, else
// {form: {}} only.
func (s *userOAuthScript) connect(ctx context.Context, t *testing.T, client, token string, urlElicitation bool) {
	t.Helper()
	r := s.do(ctx, t, map[string]any{"cmd": "connect", "client": client, "token": token, "urlElicitation": urlElicitation})
	if r.ProtocolVersion != "2025-11-25" {
		t.Fatalf("%s's session negotiated %q, want 2025-11-25 (URL elicitation's version)", client, r.ProtocolVersion)
	}
}

func (s *userOAuthScript) list(ctx context.Context, t *testing.T, client string) []string {
	t.Helper()
	return s.do(ctx, t, map[string]any{"cmd": "list", "client": client}).Tools
}

func (s *userOAuthScript) call(ctx context.Context, t *testing.T, client, tool string) scriptReply {
	t.Helper()
	return s.do(ctx, t, map[string]any{"cmd": "call", "client": client, "name": tool, "arguments": map[string]any{}})
}

// callText calls tool and returns its text, which must not be an error.
func (s *userOAuthScript) callText(ctx context.Context, t *testing.T, client, tool string) string {
	t.Helper()
	r := s.call(ctx, t, client, tool)
	if r.Result == nil || r.Result.IsError {
		t.Fatalf("%s calling %s: %s", client, tool, r.describe())
	}
	return r.Result.Text
}

// callElicits calls tool and expects the URL elicitation of the 2025-11-25 spec: JSON-RPC error -32042 (the
// SDK's UrlElicitationRequiredError) with one data.elicitations entry of mode url, an id, a message, and a
// link under base + "/connect/".
func (s *userOAuthScript) callElicits(ctx context.Context, t *testing.T, client, tool, base string) urlElicitation {
	t.Helper()
	r := s.call(ctx, t, client, tool)
	if r.Error == nil || r.Error.Code != -32042 {
		t.Fatalf("%s calling %s: %s; want JSON-RPC error -32042 (URL elicitation required)", client, tool, r.describe())
	}
	var data struct {
		Elicitations []urlElicitation `json:"elicitations"`
	}
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("%s calling %s: -32042 data %s; want one elicitation (%v)", client, tool, r.Error.Data, err)
	}
	el := data.Elicitations[0]
	id, found := strings.CutPrefix(el.URL, base+"/connect/")
	if el.Mode != "url" || el.ElicitationID == "" || el.Message == "" || !found || id == "" || strings.ContainsAny(id, "/?#") {
		t.Fatalf("%s calling %s: elicitation %+v; want mode url, an elicitationId, a message and a link %s/connect/<id>", client, tool, el, base)
	}
	if r.Error.Class != "UrlElicitationRequiredError" {
		t.Errorf("the TypeScript SDK surfaced -32042 as %q, want UrlElicitationRequiredError", r.Error.Class)
	}
	t.Logf("%s calling %s: -32042, elicitation %s: %q", client, tool, el.ElicitationID, el.Message)
	return el
}

// mark is where the events heard so far end: waitEvent(mark, …) looks only at later ones.
func (s *userOAuthScript) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// find looks for an event among those heard from index from on.
func (s *userOAuthScript) find(from int, pred func(scriptEvent) bool) (scriptEvent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events[from:] {
		if pred(e) {
			return e, true
		}
	}
	return scriptEvent{}, false
}

// waitEvent waits for an event from index from on that pred accepts.
func (s *userOAuthScript) waitEvent(ctx context.Context, t *testing.T, from int, what string, pred func(scriptEvent) bool) scriptEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, scriptWait)
	defer cancel()
	for {
		s.mu.Lock()
		wake := s.wake
		s.mu.Unlock()
		if e, ok := s.find(from, pred); ok {
			return e
		}
		select {
		case <-wake:
		case <-s.done:
			t.Fatalf("useroauth.mjs exited while waiting for %s:\n%s", what, s.log.tail(20))
		case <-ctx.Done():
			s.mu.Lock()
			heard := slices.Clone(s.events[from:])
			s.mu.Unlock()
			t.Fatalf("never heard %s (%v); heard since: %+v", what, ctx.Err(), heard)
		}
	}
}

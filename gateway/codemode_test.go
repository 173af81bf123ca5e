//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 but is a legacy-era feature a script's call must carry; the test exercises it on purpose.

package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// codeGateway serves alpha (the SDK test server, over stdio) and legacy (the same, held to the 2025-11-25 era,
// where it may send requests during a call) on two endpoints in code mode: /mcp/ask, where a script's writes ask
// the user, and /mcp/allow, where they need no consent.
func codeGateway(t *testing.T, markers string) *harness {
	t.Helper()
	alpha := newUpstream(t, kindStdio, "alpha", routing.Shared, markers)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "legacy", Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env: map[string]string{envServer: "legacy", envMarkers: markers}, ShutdownGrace: 2 * time.Second, Logger: testLogger(), Protocol: upstream.ProtocolLegacy})
	if err != nil {
		t.Fatal(err)
	}
	legacy := routing.UpstreamConfig{Name: "legacy", Prefix: "legacy__", Mode: routing.PerClient, Transport: tr, Kind: "stdio", Protocol: upstream.ProtocolLegacy,
		Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}}
	code := func(name string, w codemode.Writes) routing.Endpoint {
		return routing.Endpoint{Name: name, Include: []string{"alpha__*", "legacy__sample"}, Search: &routing.SearchMode{}, Code: &codemode.Mode{Writes: w}}
	}
	return startGateway(t, routing.Options{Shape: routing.Shape{Endpoints: []routing.Endpoint{code("ask", codemode.WritesAsk), code("allow", codemode.WritesAllow)}}},
		gateway.Options{}, alpha, legacy)
}

// runScript calls run_script through an SDK client session and returns the result's text.
func runScriptSDK(t *testing.T, cs *mcp.ClientSession, code string) string {
	t.Helper()
	return call(t, cs, "run_script", map[string]any{"code": code})
}

// TestCodeModeSDK (issue 35): the official Go SDK client, through the HTTP front end, on endpoints in code mode.
//   - list: tools/list is search mode's meta-tools and code mode's; describe_tools declares a tool in TypeScript;
//   - run: a script calls tools (in parallel too), prints and returns; both reach the client as text, and the
//     value as structuredContent;
//   - consent: every test server tool is a write: on /mcp/ask, a client with elicitation is asked once for fifty
//     parallel calls when it answers "for the rest of this run", once per call when it allows once, and a
//     declined write throws in the script; a client without elicitation gets a refusal; a 2026-07-28 client
//     is asked through input_required, once for fifty writes; /mcp/allow asks nobody;
//   - sampling: an upstream's request during a script's call reaches the client, and its answer the upstream;
//   - progress: the script's progress(n, total, msg) reaches the client;
//   - cancel: cancelling run_script cancels the call its script waits for, upstream.
func TestCodeModeSDK(t *testing.T) {
	md := markerSink(t)
	h := codeGateway(t, md)
	at := func(endpoint string) *harness { c := *h; c.url = h.ts.URL + "/mcp/" + endpoint; return &c }

	t.Run("list", func(t *testing.T) {
		cs := at("allow").connect(t, "lister", nil)
		if got := toolNames(t, cs); !slices.Equal(got, []string{"call_tool", "describe_tools", "run_script", "search_tools"}) {
			t.Errorf("tools/list: %v", got)
		}
		decl := call(t, cs, "describe_tools", map[string]any{"names": []string{"alpha__echo"}})
		if !strings.Contains(decl, "alpha__echo(args") || !strings.Contains(decl, "text") || !strings.Contains(decl, "returns its text") {
			t.Errorf("describe_tools: %s", decl)
		}
	})

	t.Run("run", func(t *testing.T) {
		cs := at("allow").connect(t, "runner", nil)
		res, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"code": `
			const names: string[] = ["a", "b", "c"];
			const got = await Promise.all(names.map(n => tools.alpha__echo({ text: n })));
			const texts = got.map((c: any) => c[0].text);
			console.log("echoed", texts.join(""));
			return { texts, who: (await tools.alpha__whoami({}))[0].text };`}})
		if err != nil || res.IsError {
			t.Fatalf("run_script: %v %s", err, resultText(res))
		}
		if got := resultText(res); got != `echoed abc`+"\n"+`=> {"texts":["a","b","c"],"who":"alpha"}` {
			t.Errorf("text: %q", got)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		if !strings.Contains(string(sc), `"value":{"texts":["a","b","c"],"who":"alpha"}`) || !strings.Contains(string(sc), `"calls":4`) {
			t.Errorf("structuredContent: %s", sc)
		}
	})

	t.Run("consent", func(t *testing.T) {
		var mu sync.Mutex
		var asked []string
		answer := "allow for the rest of this run"
		action := "accept"
		cs := at("ask").connect(t, "consenting", &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: action, Content: map[string]any{"decision": answer}}, nil
			},
		})
		fifty := `const r = await Promise.all(Array.from({length: 50}, (_, i) => tools.alpha__echo({ text: "w" + i }))); return r.length`
		if got := runScriptSDK(t, cs, fifty); !strings.HasSuffix(got, "=> 50") {
			t.Fatalf("fifty writes: %s", got)
		}
		mu.Lock()
		if len(asked) != 1 || !strings.Contains(asked[0], "alpha__echo") || !strings.Contains(asked[0], `"text":"w`) {
			t.Errorf("asked %q, want once, naming the tool and its arguments", asked)
		}
		asked, answer = nil, "allow once"
		mu.Unlock()
		if got := runScriptSDK(t, cs, `await tools.alpha__echo({text: "1"}); await tools.alpha__echo({text: "2"}); return "two"`); !strings.HasSuffix(got, `=> "two"`) {
			t.Errorf("two writes allowed once each: %s", got)
		}
		mu.Lock()
		if len(asked) != 2 {
			t.Errorf("asked %d times for two writes allowed once, want 2", len(asked))
		}
		action = "decline"
		mu.Unlock()
		declined := `try { await tools.alpha__echo({text: "no"}); return "written" } catch (e) { return e.message }`
		if got := runScriptSDK(t, cs, declined); !strings.Contains(got, "alpha__echo is a write and it was declined") {
			t.Errorf("declined write: %s", got)
		}
		for name, cs := range map[string]*mcp.ClientSession{
			"without elicitation":            at("ask").connect(t, "plain", nil),
			"2026-07-28 without elicitation": connectAt(t, h.ts.URL+"/mcp/ask", "modern"),
		} {
			if got := runScriptSDK(t, cs, declined); !strings.Contains(got, "alpha__echo is a write and consent could not be asked") {
				t.Errorf("%s: %s", name, got)
			}
		}
		// A 2026-07-28 client is asked through input_required, which the SDK answers with its handler and retries.
		mu.Lock()
		asked, answer, action = nil, "allow for the rest of this run", "accept"
		mu.Unlock()
		modernAsk := at("ask").connectVersion(t, "modern-consenting", &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: action, Content: map[string]any{"decision": answer}}, nil
			},
		}, "")
		if got := runScriptSDK(t, modernAsk, fifty); !strings.HasSuffix(got, "=> 50") {
			t.Errorf("2026-07-28, fifty writes: %s", got)
		}
		mu.Lock()
		if len(asked) != 1 {
			t.Errorf("2026-07-28: asked %d times, want once", len(asked))
		}
		mu.Unlock()
		modern := connectAt(t, h.ts.URL+"/mcp/allow", "modern")
		if got := runScriptSDK(t, modern, `return (await tools.alpha__echo({text: "free"}))[0].text`); !strings.HasSuffix(got, `=> "free"`) {
			t.Errorf("2026-07-28 on /mcp/allow: %s", got)
		}
	})

	t.Run("sampling", func(t *testing.T) {
		// An upstream's request during a script's call reaches the client on run_script's stream, and its answer
		// the upstream.
		cs := at("allow").connect(t, "sampled", &mcp.ClientOptions{
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "Paris"}}, nil
			},
		})
		if got := runScriptSDK(t, cs, `return (await tools.legacy__sample({tag: "s"}))[0].text`); !strings.Contains(got, "Paris") {
			t.Errorf("a sampling call from a script answered %q", got)
		}
	})

	t.Run("progress", func(t *testing.T) {
		plog := newProgressLog()
		cs := at("allow").connect(t, "progress", &mcp.ClientOptions{ProgressNotificationHandler: plog.handler})
		p := &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"code": `progress(1, 2, "half"); await tools.alpha__echo({text: "x"}); progress(2, 2, "done")`}}
		p.SetProgressToken("script")
		if _, err := cs.CallTool(ctxGuard(t), p); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"half", "done"} {
			select {
			case n := <-plog.ch:
				if n.Message != want || n.ProgressToken != "script" {
					t.Errorf("progress %+v, want %q under the call's token", n, want)
				}
			case <-ctxGuard(t).Done():
				t.Fatalf("no progress %q", want)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		plog := newProgressLog()
		cs := at("allow").connect(t, "canceller", &mcp.ClientOptions{ProgressNotificationHandler: plog.handler})
		ctx, cancel := context.WithCancel(ctxGuard(t))
		p := &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"code": `
			const slow = tools.alpha__slow({ tag: "script" });
			await tools.alpha__echo({ text: "sent" }); // the slow call went first, on the same upstream session
			progress(1, 1, "waiting");
			await slow;`}}
		p.SetProgressToken("c")
		errc := make(chan error, 1)
		go func() { _, err := cs.CallTool(ctx, p); errc <- err }()
		select {
		case <-plog.ch:
		case <-ctxGuard(t).Done():
			t.Fatal("the script did not report waiting")
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled run_script ended with %v", err)
		}
		waitMarker(t, md, "cancel-script")
	})
}

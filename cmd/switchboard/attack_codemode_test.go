package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAttacksCodeMode (issue 35, item 7): the real binary, its sandbox workers, and scripts an attacker would
// write, on an endpoint in code mode that selects alpha's tools only. A script cannot reach a tool outside the
// view, nor one spelled with Unicode look-alikes, nor the meta-tools, and each name it asks outside them is
// audited as a refusal; its limits hold (a loop, a memory bomb), and a run past one leaves the next run working;
// one caller's flood of runs is bounded, every run of it ends, and the gateway serves afterwards.
func TestAttacksCodeMode(t *testing.T) {
	e2eGate(t)
	base, gw := serveAttackGateway(t, "switchboard-attack-codemode", func(listen string) string {
		return fmt.Sprintf(`listen: %q
upstreams:
  - {name: alpha, url: %q, session: shared}
  - {name: beta, url: %q, session: shared}
endpoints:
  - name: code
    include: ["alpha__*"]
    discovery: code
    codeMode: {writes: allow, cpuTime: 500ms, wallTime: 20s}
  - name: roomy
    include: ["alpha__*"]
    discovery: code
    codeMode: {writes: allow}
`, listen, sdkUpstream(t, "alpha")+"/mcp", sdkUpstream(t, "beta")+"/mcp")
	})
	ctx, cancel := context.WithTimeout(context.Background(), opsWait)
	defer cancel()
	connect := func(endpoint string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "attacker", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp/" + endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	cs, roomy := connect("code"), connect("roomy")
	runOn := func(cs *mcp.ClientSession, code string) (text string, isError bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"code": code}})
		if err != nil {
			t.Fatalf("run_script: %v", err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	run := func(code string) (string, bool) { t.Helper(); return runOn(cs, code) }
	for _, tc := range []struct{ name, code, want string }{
		{"outside the view", `return [typeof tools.beta__echo, Object.keys(tools)]`, `=> ["undefined",["alpha__echo"]]`},
		{"outside the view, called", `try { await tools["beta__echo"]({text: "x"}) } catch (e) { return e.name }`, `=> "TypeError"`},
		{"Cyrillic look-alike", `return typeof tools["alpha__\u0435cho"]`, `=> "undefined"`},
		{"fullwidth look-alike", `return typeof tools["ａｌｐｈａ__echo"]`, `=> "undefined"`},
		{"meta-tools", `return [typeof tools.run_script, typeof tools.describe_tools, typeof tools.search_tools, typeof tools.call_tool]`,
			`=> ["undefined","undefined","undefined","undefined"]`},
		{"a real call", `return (await tools.alpha__echo({text: "hi"}))[0].text`, `=> "alpha: hi"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, isErr := run(tc.code); isErr || !strings.HasSuffix(got, tc.want) {
				t.Errorf("answered %q (error %v), want %s", got, isErr, tc.want)
			}
		})
	}
	t.Run("refusals audited", func(t *testing.T) {
		// The names asked of tools outside the view fail inside the sandbox worker; each is still an audit event.
		for _, tool := range []string{"beta__echo", "run_script", "call_tool"} {
			found := false
			for _, line := range strings.Split(gw.log.String(), "\n") {
				if strings.Contains(line, "tool="+tool+" ") && strings.Contains(line, "outcome=refused") &&
					strings.Contains(line, `reason="a script named a tool it may not call"`) && strings.Contains(line, "script=") {
					found = true
				}
			}
			if !found {
				t.Errorf("no refusal audited for a script's %s:\n%s", tool, gw.log.tail(30))
			}
		}
	})
	t.Run("look-alike called directly", func(t *testing.T) {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__\u0435cho", Arguments: map[string]any{"text": "x"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("a look-alike name answered %v, want unknown tool", err)
		}
	})
	for _, tc := range []struct {
		name, code, limit string
		cs                *mcp.ClientSession
	}{
		{"infinite loop", `while (true) {}`, "CPU time limit", cs},
		{"deep recursion", `const f = (n: number): number => f(n + 1) + 1; return f(0)`, "call stack depth limit", cs},
		// On roomy, whose CPU time is the default 10s: the worker's memory bound ends it first.
		{"memory bomb", `const a: number[][] = []; for (;;) a.push(new Array(1e5).fill(a.length))`, "memory limit", roomy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.limit == "memory limit" && os.Getenv("SWITCHBOARD_E2E_RACE") == "1" {
				// A gateway built with -race sets no RLIMIT_DATA on its workers (the detector's shadow memory
				// would count against it: routing/codemode/race_on.go); .ci/test runs this row on a plain build.
				t.Skip("the memory bound is not set in a -race build; run with SWITCHBOARD_E2E_RACE=0")
			}
			if got, isErr := runOn(tc.cs, tc.code); !isErr || !strings.Contains(got, tc.limit) {
				t.Errorf("answered %q (error %v), want an error naming the %s", got, isErr, tc.limit)
			}
			if got, isErr := runOn(tc.cs, `return (await tools.alpha__echo({text: "after"}))[0].text`); isErr || !strings.HasSuffix(got, `"alpha: after"`) {
				t.Errorf("the next run answered %q", got)
			}
		})
	}
	t.Run("many runs at once", func(t *testing.T) {
		const n = 24
		var wg sync.WaitGroup
		answers := make([]string, n)
		for i := range n {
			wg.Go(func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"code": `while (true) {}`}})
				if err != nil {
					answers[i] = "protocol error: " + err.Error()
					return
				}
				b, _ := json.Marshal(res.Content)
				answers[i] = string(b)
			})
		}
		wg.Wait()
		capped := 0
		for _, a := range answers {
			switch {
			case strings.Contains(a, "the most one caller may have"):
				capped++
			case strings.Contains(a, "CPU time limit"):
			default:
				t.Errorf("a run answered %s, want the CPU time limit or the per-caller bound", a)
			}
		}
		if capped == 0 {
			t.Errorf("none of %d runs at once was refused by the per-caller bound", n)
		}
		start := time.Now()
		if got, isErr := run(`return 1`); isErr || !strings.HasSuffix(got, "=> 1") {
			t.Errorf("a run after the flood answered %q", got)
		}
		t.Logf("%d of %d runs refused; a run after the flood took %s", capped, n, time.Since(start))
	})
}

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestAttacksHints (issue 31, items 15 and 17): what the gateway announces must be true for the client reading
// it. initialize announces the tasks capability only to 2025-11-25 clients; a 2026-07-28 list says how long it
// stays fresh (listCacheTTL) and that it is public when it is everyone's.
func TestAttacksHints(t *testing.T) {
	e2eGate(t)
	base, _ := serveAttackGateway(t, "switchboard-attack-hints", func(listen string) string {
		return fmt.Sprintf(`listen: %q
listCacheTTL: 2m
upstreams:
  - {name: alpha, url: %q, session: shared, protocol: legacy, tasks: optional}
`, listen, sdkUpstream(t, "alpha")+"/mcp")
	})
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run("initialize "+v, func(t *testing.T) {
			_, body := send(t, base, attack{body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":` + strconv.Quote(v) +
				`,"capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`}, "")
			var m struct {
				Result struct {
					Capabilities map[string]json.RawMessage `json:"capabilities"`
				} `json:"result"`
			}
			if err := json.Unmarshal(lastJSON(body), &m); err != nil || m.Result.Capabilities["tools"] == nil {
				t.Fatalf("initialize answered %.300s", body)
			}
			if _, ok := m.Result.Capabilities["tasks"]; ok != (v == "2025-11-25") {
				t.Errorf("tasks announced %t to a %s client: %.300s", ok, v, body)
			}
		})
	}
	for _, method := range []string{"tools/list", "prompts/list"} {
		t.Run("2026-07-28 "+method, func(t *testing.T) {
			_, body := send(t, base, attack{headers: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method},
				body: `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + modernMeta + `}}`}, "")
			var m struct {
				Result struct {
					TTL   *int64 `json:"ttlMs"`
					Scope string `json:"cacheScope"`
				} `json:"result"`
			}
			if err := json.Unmarshal(lastJSON(body), &m); err != nil || m.Result.TTL == nil || *m.Result.TTL != 120000 || m.Result.Scope != "public" {
				t.Errorf("%s answered %.300s; want ttlMs 120000 (listCacheTTL), cacheScope public", method, body)
			}
			if method == "tools/list" && !strings.Contains(body, "alpha__echo") {
				t.Errorf("tools/list lacks alpha__echo: %.300s", body)
			}
		})
	}
}

package routing

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

func TestCapsProfile(t *testing.T) {
	for _, tc := range []struct{ caps, name string }{
		{`{}`, "none"},
		{`{"sampling":{}}`, "sampling"},
		{`{"roots":{"listChanged":true},"sampling":{}}`, "roots+sampling"},
		{`{"elicitation":{}}`, "form"},
		{`{"elicitation":{"url":{}}}`, "url"},
		{`{"elicitation":{"form":{},"url":{}}}`, "form+url"},
		{`{"roots":{},"sampling":{},"elicitation":{"form":{},"url":{}}}`, ""},
		{`{"roots":{},"sampling":{},"elicitation":{},"experimental":{"x":{}}}`, "roots+sampling+form"},
	} {
		var c clientCaps
		if err := json.Unmarshal([]byte(tc.caps), &c); err != nil {
			t.Fatal(err)
		}
		name, caps := capsProfile(c)
		if name != tc.name {
			t.Errorf("capsProfile(%s) = %q, want %q", tc.caps, name, tc.name)
		}
		if !json.Valid(caps) {
			t.Errorf("capsProfile(%s) declares invalid JSON %s", tc.caps, caps)
		}
	}
}

// TestProfileCatalogs: a per-client upstream that offers a tool only to clients with sampling (as
// server-everything does) shows it to exactly those clients, each through its own catalog view; a shared
// upstream's list is the same for all.
func TestProfileCatalogs(t *testing.T) {
	var mu sync.Mutex
	sampling := map[int]bool{} // connection → declared sampling
	ft := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs("initialize") {
			mu.Lock()
			_, _, ok := jsonrpc.Lookup(m.Params(), "capabilities", "sampling")
			sampling[c.n] = ok
			mu.Unlock()
		}
		if m.MethodIs("tools/list") {
			mu.Lock()
			withSampling := sampling[c.n]
			mu.Unlock()
			tools := `[{"name":"add","inputSchema":{"type":"object"}}`
			if withSampling {
				tools += `,{"name":"summarize","inputSchema":{"type":"object"}}`
			}
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"tools":`+tools+`]}`)))
			return
		}
		defaultAnswer(c, m, fakeInitCaps, `[]`)
	})
	r := startRouter(t, Options{}, UpstreamConfig{Name: "svc", Prefix: "svc__", Mode: PerClient, Transport: ft, Kind: "stdio"})
	names := func(s *Session) string {
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var res struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal(m.Result(), &res); err != nil {
			t.Fatalf("tools/list: %s", m.Raw())
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return strings.Join(out, ",")
	}
	plain := r.session(`{}`)
	sampler := r.session(`{"sampling":{}}`)
	full := r.session(`{"roots":{},"sampling":{},"elicitation":{"form":{},"url":{}}}`)
	if got := names(plain); got != "svc__add" {
		t.Errorf("a client without sampling sees %q, want svc__add only", got)
	}
	if got := names(sampler); got != "svc__add,svc__summarize" {
		t.Errorf("a client with sampling sees %q, want both tools", got)
	}
	if got := names(full); got != "svc__add,svc__summarize" {
		t.Errorf("a client with everything sees %q, want both tools", got)
	}
	if plain.profile == sampler.profile || full.profile != "" {
		t.Errorf("profiles: plain %q, sampler %q, full %q", plain.profile, sampler.profile, full.profile)
	}
}

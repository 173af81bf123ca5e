package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing"
)

// TestCheckParamHeaders: a modern client's Mcp-Param-* headers must mirror the bound arguments exactly (after
// the =?base64?…?= encoding), and name none that is absent (SEP-2243, -32020 otherwise).
func TestCheckParamHeaders(t *testing.T) {
	bindings := []routing.ParamHeader{
		{Path: []string{"region"}, Header: "Mcp-Param-Region"},
		{Path: []string{"opts", "dry"}, Header: "Mcp-Param-Dry"},
	}
	for _, c := range []struct {
		name    string
		args    string
		headers map[string]string
		want    string // a fragment of the mismatch message; "" for none
		twice   string // a header sent a second time
	}{
		{"mirrored", `{"region":"eu","opts":{"dry":true}}`, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Dry": "true"}, "", ""},
		{"encoded", `{"region":"Zürich"}`, map[string]string{"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="}, "", ""},
		{"absent and unset", `{}`, nil, "", ""},
		{"null is absent", `{"region":null}`, nil, "", ""},
		{"integer", `{"region":42}`, map[string]string{"Mcp-Param-Region": "42"}, "", ""},
		{"missing header", `{"region":"eu"}`, nil, "must be mirrored in the Mcp-Param-Region header", ""},
		{"header without argument", `{}`, map[string]string{"Mcp-Param-Region": "eu"}, "is set but the argument region is absent", ""},
		{"different value", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "us"}, "does not match the argument region", ""},
		{"bad encoding", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "=?base64?!!?="}, "not valid =?base64?", ""},
		{"not a primitive", `{"region":{"a":1}}`, map[string]string{"Mcp-Param-Region": "x"}, "must be a string, integer or boolean", ""},
		{"fraction", `{"region":1.5}`, map[string]string{"Mcp-Param-Region": "1.5"}, "must be a string, integer or boolean", ""},
		// an empty string is mirrored as an empty header (the Go SDK's client does so); only its absence is a mismatch
		{"empty string mirrored empty", `{"region":""}`, map[string]string{"Mcp-Param-Region": ""}, "", ""},
		{"empty string not mirrored", `{"region":""}`, nil, "must be mirrored in the Mcp-Param-Region header", ""},
		{"empty header for a value", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": ""}, "does not match the argument region", ""},
		{"empty header without argument", `{}`, map[string]string{"Mcp-Param-Region": ""}, "is set but the argument region is absent", ""},
		{"sent twice", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "eu"}, "sent more than once", "Mcp-Param-Region"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.headers {
				h.Set(k, v)
			}
			if c.twice != "" {
				h.Add(c.twice, h.Get(c.twice))
			}
			got := checkParamHeaders(h, []byte(`{"name":"t","arguments":`+c.args+`}`), bindings)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("checkParamHeaders = %q, want %q", got, c.want)
			}
		})
	}
}

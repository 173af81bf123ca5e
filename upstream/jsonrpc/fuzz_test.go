package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":"a\u0022b","result":{"content":[{"type":"text","text":"}{"}]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"m","ID":2}`,
		` [1,{"a":[]}] `, `"x"`, `{`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(raw)
		valid := json.Valid(raw)
		if !valid {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("json.Valid false but Parse err = %v", err)
			}
			return
		}
		if errors.Is(err, ErrParse) {
			t.Fatalf("json.Valid true but Parse err = %v", err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("unexpected error kind %v", err)
			}
			return
		}
		if m.Kind() == KindInvalid {
			t.Fatal("success with KindInvalid")
		}
		if got := m.AppendWithID(nil, m.ID()); string(got) != string(raw) {
			t.Fatalf("AppendWithID(ID()) = %q, want %q", got, raw)
		}
		for _, v := range [][]byte{m.ID(), m.Params(), m.Result(), m.Error()} {
			if v != nil && !json.Valid(v) {
				t.Fatalf("member %q not valid JSON", v)
			}
		}
		if p := m.Params(); p != nil {
			if s, e, ok := Lookup(p, "name"); ok && !json.Valid(p[s:e]) {
				t.Fatalf("Lookup result %q invalid", p[s:e])
			}
		}
		_ = m.Method()
		_, _ = m.ErrorCode()
		// Cross-check the envelope against encoding/json where it is
		// unambiguous (our rules reject duplicates and case-folded keys).
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(raw, &env) == nil {
			if env.Method != nil && *env.Method != m.Method() {
				t.Fatalf("method %q vs encoding/json %q", m.Method(), *env.Method)
			}
		}
		// Re-encoding with a fresh id must still parse.
		if _, err := Parse(m.AppendWithID(nil, []byte(`"gw-1"`))); err != nil {
			t.Fatalf("after id swap: %v", err)
		}
		// A spliced message's moved spans are what Parse reads.
		checkAppendMessage(t, m, []byte(`"gw-1"`), []ParamEdit{
			{Path: []string{"_meta", "progressToken"}, With: []byte(`12`)},
			{Path: []string{"name"}, With: []byte(`"renamed"`)},
			{Path: []string{"_meta"}, With: []byte(`{"k":[1,2]}`), Insert: true},
		})
		// Deletions and nested inserts, together, leave a message Parse reads the same way.
		checkAppendMessage(t, m, nil, []ParamEdit{
			{Path: []string{"task"}, Delete: true},
			{Path: []string{"arguments", "preset"}, With: []byte(`"p"`), Insert: true},
			{Path: []string{"arguments", "b"}, Delete: true},
			{Path: []string{"_meta", "x"}, Delete: true},
			{Path: []string{"_meta"}, With: []byte(`{}`), Insert: true},
		})
	})
}

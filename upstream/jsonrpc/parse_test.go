package jsonrpc

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

func TestParseIDs(t *testing.T) {
	tests := []struct {
		id   string
		ok   bool
		kind Kind
	}{
		{`1`, true, KindRequest},
		{`0`, true, KindRequest},
		{`-0`, true, KindRequest},
		{`9007199254740993`, true, KindRequest},
		{`123456789012345678901234567890`, true, KindRequest},
		{`1e400`, false, 0},
		{`1E400`, false, 0},
		{`1e3`, false, 0},
		{`-1.5E-7`, false, 0},
		{`1.5`, false, 0},
		{`1.0`, false, 0},
		{`""`, true, KindRequest},
		{`"a\"b"`, true, KindRequest},
		{`"a\u0022b"`, true, KindRequest},
		{`"\ud83d\ude00"`, true, KindRequest},
		{`"\\\/\b\f\n\r\t"`, true, KindRequest},
		{`"héllo 世界"`, true, KindRequest},
		{`"{\"id\":2}"`, true, KindRequest},
		{`null`, false, 0},
		{`[]`, false, 0},
		{`{}`, false, 0},
		{`true`, false, 0},
		{`false`, false, 0},
		{`[1]`, false, 0},
	}
	for _, tt := range tests {
		raw := []byte(`{"jsonrpc":"2.0","id":` + tt.id + `,"method":"ping"}`)
		m, err := Parse(raw)
		if tt.ok != (err == nil) {
			t.Errorf("id %s: err = %v, want ok=%v", tt.id, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("id %s: err = %v, want ErrInvalidRequest", tt.id, err)
			}
			continue
		}
		if m.Kind() != tt.kind || string(m.ID()) != tt.id {
			t.Errorf("id %s: kind %v id %s", tt.id, m.Kind(), m.ID())
		}
		if got := m.AppendWithID(nil, m.ID()); string(got) != string(raw) {
			t.Errorf("id %s: round trip %s", tt.id, got)
		}
		// The id must survive being copied into a response byte for byte.
		resp, err := Parse(AppendResult(nil, m.ID(), []byte(`{}`)))
		if err != nil || string(resp.ID()) != tt.id {
			t.Errorf("id %s: response id %s err %v", tt.id, resp.ID(), err)
		}
	}
}

func TestParseKinds(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		kind   Kind   // KindInvalid means an error is expected
		err    error  // sentinel when kind is invalid
		method string // expected Method
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, KindRequest, nil, "tools/call"},
		{"request no params", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, KindRequest, nil, "ping"},
		{"request array params", `{"jsonrpc":"2.0","id":"a","method":"m","params":[1,2]}`, KindRequest, nil, "m"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, nil, "notifications/initialized"},
		{"escaped method", `{"jsonrpc":"2.0","method":"a\/b\u0041"}`, KindNotification, nil, "a/bA"},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, KindResponse, nil, ""},
		{"result null", `{"jsonrpc":"2.0","id":1,"result":null}`, KindResponse, nil, ""},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, KindResponse, nil, ""},
		{"error null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, KindResponse, nil, ""},
		{"members any order", `{"method":"m","params":{},"id":7,"jsonrpc":"2.0"}`, KindRequest, nil, "m"},
		{"unknown member", `{"jsonrpc":"2.0","method":"m","x":1,"y":{"id":2}}`, KindNotification, nil, "m"},
		{"escaped key", `{"jsonrpc":"2.0","\u0069d":1,"method":"m"}`, KindRequest, nil, "m"},
		{"escaped version", `{"jsonrpc":"2\u002e0","method":"m"}`, KindNotification, nil, "m"},
		{"whitespace everywhere", " \r\n\t{ \"jsonrpc\" \n:\r\"2.0\"\t,\n\"id\" : 1 ,\"method\"\n:\n\"m\" , \"params\" : { \"a\" : [ 1 , 2 ] } \n}\r\n ", KindRequest, nil, "m"},
		{"nested decoys", `{"params":{"id":5,"method":"evil","result":{"error":1},"jsonrpc":"1.0","s":"}{\"id\":9,"},"jsonrpc":"2.0","method":"real","id":"x"}`, KindRequest, nil, "real"},
		{"braces in strings", `{"jsonrpc":"2.0","id":"}{][","method":"{\"}","params":{"a":"\\\"}"}}`, KindRequest, nil, `{"}`},

		{"empty", ``, 0, ErrParse, ""},
		{"spaces", "   ", 0, ErrParse, ""},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"m"`, 0, ErrParse, ""},
		{"truncated string", `{"jsonrpc":"2.0","id":1,"method":"m`, 0, ErrParse, ""},
		{"truncated escape", `{"jsonrpc":"2.0","id":"\u00`, 0, ErrParse, ""},
		{"trailing garbage", `{"jsonrpc":"2.0","method":"m"}x`, 0, ErrParse, ""},
		{"two objects", `{"jsonrpc":"2.0","method":"m"}{}`, 0, ErrParse, ""},
		{"trailing comma", `{"jsonrpc":"2.0","method":"m",}`, 0, ErrParse, ""},
		{"single quotes", `{'jsonrpc':'2.0'}`, 0, ErrParse, ""},
		{"bad number", `{"jsonrpc":"2.0","id":01,"method":"m"}`, 0, ErrParse, ""},
		{"bad number 2", `{"jsonrpc":"2.0","id":1.,"method":"m"}`, 0, ErrParse, ""},
		{"bad number 3", `{"jsonrpc":"2.0","id":-,"method":"m"}`, 0, ErrParse, ""},
		{"bad number 4", `{"jsonrpc":"2.0","id":1e,"method":"m"}`, 0, ErrParse, ""},
		{"bad number 5", `{"jsonrpc":"2.0","id":+1,"method":"m"}`, 0, ErrParse, ""},
		{"NaN", `{"jsonrpc":"2.0","id":NaN,"method":"m"}`, 0, ErrParse, ""},
		{"bad escape", `{"jsonrpc":"2.0","method":"\x"}`, 0, ErrParse, ""},
		{"control char", "{\"jsonrpc\":\"2.0\",\"method\":\"a\nb\"}", 0, ErrParse, ""},
		{"bad literal", `{"jsonrpc":"2.0","method":"m","params":[tru]}`, 0, ErrParse, ""},
		{"mismatched", `{"jsonrpc":"2.0","method":"m","params":[1}}`, 0, ErrParse, ""},
		{"missing colon", `{"jsonrpc" "2.0"}`, 0, ErrParse, ""},

		{"not object", `[1]`, 0, ErrInvalidRequest, ""},
		{"string", `"x"`, 0, ErrInvalidRequest, ""},
		{"empty object", `{}`, 0, ErrInvalidRequest, ""},
		{"no version", `{"id":1,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"numeric version", `{"jsonrpc":2.0,"id":1,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"numeric method", `{"jsonrpc":"2.0","id":1,"method":1}`, 0, ErrInvalidRequest, ""},
		{"null request id", `{"jsonrpc":"2.0","id":null,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"scalar params", `{"jsonrpc":"2.0","id":1,"method":"m","params":1}`, 0, ErrInvalidRequest, ""},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"duplicate escaped id", `{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"duplicate method", `{"jsonrpc":"2.0","method":"a","method":"b"}`, 0, ErrInvalidRequest, ""},
		{"duplicate unknown", `{"jsonrpc":"2.0","method":"a","x":1,"x":2}`, 0, ErrInvalidRequest, ""},
		{"case-folded id", `{"jsonrpc":"2.0","id":1,"ID":2,"method":"m"}`, 0, ErrInvalidRequest, ""},
		{"case-folded method", `{"jsonrpc":"2.0","Method":"m"}`, 0, ErrInvalidRequest, ""},
		{"long s params", `{"jsonrpc":"2.0","method":"m","paramſ":{}}`, 0, ErrInvalidRequest, ""},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"m","result":1}`, 0, ErrInvalidRequest, ""},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}`, 0, ErrInvalidRequest, ""},
		{"response no id", `{"jsonrpc":"2.0","result":1}`, 0, ErrInvalidRequest, ""},
		{"response neither", `{"jsonrpc":"2.0","id":1}`, 0, ErrInvalidRequest, ""},
		{"null id result", `{"jsonrpc":"2.0","id":null,"result":1}`, 0, ErrInvalidRequest, ""},
		{"error not object", `{"jsonrpc":"2.0","id":1,"error":"x"}`, 0, ErrInvalidRequest, ""},
		{"params without method", `{"jsonrpc":"2.0","id":1,"result":1,"params":{}}`, 0, ErrInvalidRequest, ""},
		// Syntax errors win over semantic ones found earlier.
		{"dup then garbage", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"`, 0, ErrParse, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.raw))
			if tt.kind == KindInvalid {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if m.Kind() != KindInvalid {
					t.Fatalf("kind = %v on error", m.Kind())
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if m.Kind() != tt.kind {
				t.Fatalf("kind = %v, want %v", m.Kind(), tt.kind)
			}
			if m.Method() != tt.method {
				t.Fatalf("method = %q, want %q", m.Method(), tt.method)
			}
			if tt.method != "" && !m.MethodIs(tt.method) {
				t.Fatalf("MethodIs(%q) = false", tt.method)
			}
			if string(m.Raw()) != tt.raw {
				t.Fatal("Raw changed")
			}
		})
	}
}

func TestParseMembers(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0", "id" : "q" , "method":"m","params": {"a" : [1, {"b":"}"}]} }`)
	m, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.Params()); got != `{"a" : [1, {"b":"}"}]}` {
		t.Errorf("params = %s", got)
	}
	if string(m.ID()) != `"q"` || m.Result() != nil || m.Error() != nil {
		t.Errorf("id %s result %s error %s", m.ID(), m.Result(), m.Error())
	}
	e, _ := Parse([]byte(`{"jsonrpc":"2.0","id":1,"error":{"message":"x","code":-32601,"data":{"code":1}}}`))
	if code, ok := e.ErrorCode(); !ok || code != protocol.CodeMethodNotFound {
		t.Errorf("ErrorCode = %d %v", code, ok)
	}
	if _, ok := m.ErrorCode(); ok {
		t.Error("ErrorCode ok on request")
	}
	var zero Message
	if zero.Kind() != KindInvalid || zero.ID() != nil || zero.Method() != "" || zero.Params() != nil {
		t.Error("zero Message not empty")
	}
}

func TestParseDeepNesting(t *testing.T) {
	for _, n := range []int{100, MaxDepth - 2, MaxDepth + 5, 100000} {
		params := strings.Repeat("[", n) + strings.Repeat("]", n)
		raw := []byte(`{"jsonrpc":"2.0","method":"m","params":` + params + `}`)
		_, err := Parse(raw)
		if wantOK := n+1 <= MaxDepth; wantOK != (err == nil) {
			t.Errorf("depth %d: err = %v", n, err)
		} else if err != nil && !errors.Is(err, ErrParse) {
			t.Errorf("depth %d: err = %v, want ErrParse", n, err)
		}
		// Unclosed deep nesting must fail cleanly too.
		if _, err := Parse([]byte(`{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat(`{"a":[`, n))); !errors.Is(err, ErrParse) {
			t.Errorf("unclosed depth %d: err = %v", n, err)
		}
	}
}

func TestParseInvalidUTF8(t *testing.T) {
	// Invalid UTF-8 inside strings is accepted and forwarded unchanged, as
	// encoding/json.Valid does; Method and Unquote map it to U+FFFD.
	raw := []byte("{\"jsonrpc\":\"2.0\",\"method\":\"a\xffb\"}")
	m, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m.Method() != "a\ufffdb" || string(m.Raw()) != string(raw) {
		t.Errorf("method = %q", m.Method())
	}
	if s, _ := Unquote(raw[26:31]); s != "a\ufffdb" {
		t.Errorf("Unquote = %q", s)
	}
}

func TestParseNoAlloc(t *testing.T) {
	raw := benchRequest()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocates %v times", allocs)
	}
}

package jsonrpc

import (
	"errors"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

func TestBuild(t *testing.T) {
	tests := []struct {
		got, want string
		kind      Kind
	}{
		{string(AppendRequest(nil, []byte(`1`), "tools/call", []byte(`{"name":"x"}`))),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, KindRequest},
		{string(AppendRequest(nil, []byte(`"a"`), "ping", nil)),
			`{"jsonrpc":"2.0","id":"a","method":"ping"}`, KindRequest},
		{string(AppendNotification(nil, "notifications/initialized", nil)),
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification},
		{string(AppendNotification(nil, `we"ird`, []byte(`[]`))),
			`{"jsonrpc":"2.0","method":"we\"ird","params":[]}`, KindNotification},
		{string(AppendResult(nil, []byte(`9007199254740993`), []byte(`{"tools":[]}`))),
			`{"jsonrpc":"2.0","id":9007199254740993,"result":{"tools":[]}}`, KindResponse},
		{string(AppendError(nil, nil, protocol.CodeParseError, "Parse error", nil)),
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, KindResponse},
		{string(AppendError(nil, []byte(`"x"`), protocol.CodeResourceNotFound, "no \"such\"\n", []byte(`{"uri":"a"}`))),
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32002,"message":"no \"such\"\n","data":{"uri":"a"}}}`, KindResponse},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
			continue
		}
		m, err := Parse([]byte(tt.got))
		if err != nil || m.Kind() != tt.kind {
			t.Errorf("%s: kind %v err %v", tt.got, m.Kind(), err)
		}
	}
	m, _ := Parse(AppendError(nil, []byte(`1`), protocol.CodeInvalidParams, "bad", nil))
	if code, ok := m.ErrorCode(); !ok || code != protocol.CodeInvalidParams {
		t.Errorf("ErrorCode = %d %v", code, ok)
	}
}

func TestBatch(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  error
	}{
		{` [ {"a":1} , 2,"x" ,[] ] `, []string{`{"a":1}`, `2`, `"x"`, `[]`}, nil},
		{`[{"jsonrpc":"2.0","method":"m"}]`, []string{`{"jsonrpc":"2.0","method":"m"}`}, nil},
		{`[]`, nil, ErrInvalidRequest},
		{` [ ] `, nil, ErrInvalidRequest},
		{`{}`, nil, ErrInvalidRequest},
		{`[1,]`, nil, ErrParse},
		{`[1`, nil, ErrParse},
		{`[1] x`, nil, ErrParse},
		{``, nil, ErrParse},
	}
	for _, tt := range tests {
		got, err := SplitBatch([]byte(tt.in))
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("SplitBatch(%q) err = %v, want %v", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("SplitBatch(%q) = %q, %v", tt.in, got, err)
			continue
		}
		for i := range got {
			if string(got[i]) != tt.want[i] {
				t.Errorf("SplitBatch(%q)[%d] = %q", tt.in, i, got[i])
			}
		}
	}
	for in, want := range map[string]bool{" \n[1]": true, "{}": false, "": false, "  ": false, "x[": false} {
		if IsBatch([]byte(in)) != want {
			t.Errorf("IsBatch(%q) != %v", in, want)
		}
	}
}

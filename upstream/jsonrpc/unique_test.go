package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// refDuplicate is the reference the checker must agree with: encoding/json's own tokenizer, which unescapes keys
// (and turns invalid UTF-8 into U+FFFD) as a decoding upstream does, and a set per open object.
func refDuplicate(v []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	type frame struct {
		obj    bool
		keys   map[string]bool
		expect bool // the next string token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expect {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return k, true
				}
				top.keys[k] = true
				top.expect = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the object it belongs to expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].expect = true
		}
	}
}

func TestDuplicateMember(t *testing.T) {
	many := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(extra + "}")
		return b.String()
	}
	for _, c := range []struct {
		name, v, dup string
	}{
		{"none", `{"name":"a","arguments":{"message":"x"}}`, ""},
		{"top level", `{"arguments":{},"arguments":{"message":"x"}}`, "arguments"},
		{"escaped twin", `{"arguments":{},"\u0061rguments":{"message":"x"}}`, "arguments"},
		{"escaped both", `{"\u0061":1,"\u0061":2}`, "a"},
		{"solidus escape", `{"a/b":1,"a\/b":2}`, "a/b"},
		{"surrogate pair", `{"😀":1,"\ud83d\ude00":2}`, "😀"},
		{"nested in arguments", `{"name":"e","arguments":{"message":"a","message":"b"}}`, "message"},
		{"deep in an array", `{"a":[{"x":1},{"y":{"z":1,"z":2}}]}`, "z"},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":2},"x":3}`, ""},
		{"same name in parent and child", `{"x":{"x":{"x":1}}}`, ""},
		{"case twins are not duplicates", `{"message":1,"Message":2}`, ""},
		{"invalid UTF-8 decodes alike", "{\"\xff\":1,\"\xfe\":2}", "\ufffd"},
		{"lone surrogates decode alike", `{"\ud800":1,"\udc00":2}`, "\ufffd"},
		{"many keys, none twice", many(100, `"last":0`), ""},
		{"many keys, the last twice", many(100, `"k7":0`), "k7"},
		{"many keys, escaped twin", many(40, `"\u006b3":0`), "k3"},
		{"empty objects", `{"a":{},"b":[],"c":{}}`, ""},
		{"not an object", `[1,2,"a"]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, found := DuplicateMember([]byte(c.v))
			if found != (c.dup != "") || got != c.dup {
				t.Errorf("DuplicateMember = %q, %v; want %q", got, found, c.dup)
			}
			ref, rfound := refDuplicate([]byte(c.v))
			if rfound != found || ref != got {
				t.Errorf("reference says %q, %v", ref, rfound)
			}
			// Parse finds the same in a request's params, in the same scan.
			m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.v + `}`))
			if c.v[0] != '{' {
				return // params must be structured: an array is, but only objects carry names
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, found2 := m.DuplicateMember(); found2 != found || got != c.dup {
				t.Errorf("Message.DuplicateMember = %q, %v; want %q", got, found2, c.dup)
			}
		})
	}
}

// TestDuplicateMemberOnlyParams: a result with a name twice is the upstream's answer, forwarded as it is; Parse
// tracks the request's params only, and a message edited afterwards still knows its duplicate.
func TestDuplicateMemberOnlyParams(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, found := m.DuplicateMember(); found {
		t.Error("a result's duplicate reported")
	}
	m, err = Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"m":1,"m":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, edited := m.AppendMessage(nil, []byte(`"long-rewritten-id"`), ParamEdit{Path: []string{"name"}, With: []byte(`"a_much_longer_name"`)})
	if name, found := edited.DuplicateMember(); !found || name != "m" {
		t.Errorf("after an edit: %q, %v", name, found)
	}
}

func TestParseNoAllocWithDuplicateCheck(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi","n":{"a":1,"b":[{"c":2}]}},"_meta":{"progressToken":"p"}}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocates %v times", allocs)
	}
}

func FuzzDuplicateMember(f *testing.F) {
	for _, s := range []string{
		`{"arguments":{},"\u0061rguments":{"message":"x"}}`,
		`{"a":[{"x":1},{"y":{"z":1,"\u007a":2}}]}`,
		`{"\ud83d\ude00":1,"😀":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"a\/b":1,"a/b":2}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k1\u0037":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		got, found := DuplicateMember(v)
		ref, rfound := refDuplicate(v)
		if found != rfound || got != ref {
			t.Fatalf("DuplicateMember(%q) = %q, %v; encoding/json's keys say %q, %v", v, got, found, ref, rfound)
		}
		if len(v) > 0 && bytes.TrimSpace(v)[0] == '{' {
			m, err := Parse(append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":`), v...), '}'))
			if err != nil {
				return // deeper than MaxDepth with the envelope
			}
			if name, f2 := m.DuplicateMember(); f2 != found || name != got {
				t.Fatalf("Parse's params check = %q, %v; DuplicateMember = %q, %v", name, f2, got, found)
			}
		}
	})
}

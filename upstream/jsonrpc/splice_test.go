package jsonrpc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplice(t *testing.T) {
	src := []byte("0123456789")
	tests := []struct {
		edits []Edit
		want  string
	}{
		{nil, "0123456789"},
		{[]Edit{{0, 0, []byte("x")}}, "x0123456789"},
		{[]Edit{{10, 10, []byte("x")}}, "0123456789x"},
		{[]Edit{{0, 10, nil}}, ""},
		{[]Edit{{1, 2, []byte("ab")}, {2, 2, []byte("-")}, {5, 9, []byte("Z")}}, "0ab-234Z9"},
	}
	for _, tt := range tests {
		if got := string(Splice([]byte("pre:"), src, tt.edits...)); got != "pre:"+tt.want {
			t.Errorf("Splice(%v) = %q", tt.edits, got)
		}
	}
	for _, bad := range [][]Edit{{{2, 1, nil}}, {{5, 6, nil}, {4, 7, nil}}, {{0, 11, nil}}, {{-1, 0, nil}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Splice(%v) did not panic", bad)
				}
			}()
			Splice(nil, src, bad...)
		}()
	}
}

func TestAppendWith(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		id    string // "" = nil
		edits []ParamEdit
		want  string
	}{
		{"id only", `{"jsonrpc":"2.0","id":"a\"b","method":"m"}`, `17`, nil,
			`{"jsonrpc":"2.0","id":17,"method":"m"}`},
		{"id and tool name", `{"jsonrpc":"2.0", "id" : 123456789012345678901234567890 ,"method":"tools/call","params":{"name":"srv__echo","arguments":{"name":"keep"}}}`, `"g-1"`,
			[]ParamEdit{{Path: []string{"name"}, With: []byte(`"echo"`)}},
			`{"jsonrpc":"2.0", "id" : "g-1" ,"method":"tools/call","params":{"name":"echo","arguments":{"name":"keep"}}}`},
		{"params before id", `{"params":{"_meta":{"progressToken":"c1"}},"method":"tools/call","id":5,"jsonrpc":"2.0"}`, `900`,
			[]ParamEdit{{Path: []string{"_meta", "progressToken"}, With: []byte(`"g7"`)}},
			`{"params":{"_meta":{"progressToken":"g7"}},"method":"tools/call","id":900,"jsonrpc":"2.0"}`},
		{"progress notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"g7","progress":1}}`, "",
			[]ParamEdit{{Path: []string{"progressToken"}, With: []byte(`"c1"`)}},
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1","progress":1}}`},
		{"cancellation", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":900,"reason":"x"}}`, "",
			[]ParamEdit{{Path: []string{"requestId"}, With: []byte(`5`)}},
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"x"}}`},
		{"missing path skipped", `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, `2`,
			[]ParamEdit{{Path: []string{"_meta", "progressToken"}, With: []byte(`"x"`)}},
			`{"jsonrpc":"2.0","id":2,"method":"m","params":{}}`},
		{"no params skipped", `{"jsonrpc":"2.0","id":1,"method":"m"}`, `2`,
			[]ParamEdit{{Path: []string{"name"}, With: []byte(`"x"`)}},
			`{"jsonrpc":"2.0","id":2,"method":"m"}`},
		{"nil with skipped", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"}}`, ``,
			[]ParamEdit{{Path: []string{"name"}}},
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"}}`},
		{"overlap skipped", `{"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":1}}}`, ``,
			[]ParamEdit{{Path: []string{"_meta"}, With: []byte(`{}`)}, {Path: []string{"_meta", "progressToken"}, With: []byte(`2`)}},
			`{"jsonrpc":"2.0","method":"m","params":{"_meta":{}}}`},
		{"two edits reversed", `{"jsonrpc":"2.0","method":"m","params":{"a":1,"b":2}}`, ``,
			[]ParamEdit{{Path: []string{"b"}, With: []byte(`"B"`)}, {Path: []string{"a"}, With: []byte(`"A"`)}},
			`{"jsonrpc":"2.0","method":"m","params":{"a":"A","b":"B"}}`},
		{"insert id", ` {"jsonrpc":"2.0","method":"m"}`, `3`, nil,
			` {"id":3,"jsonrpc":"2.0","method":"m"}`},
		{"delete first", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"task":{"ttl":5}, "name":"a"}}`, ``,
			[]ParamEdit{{Path: []string{"task"}, Delete: true}},
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"}}`},
		{"delete last", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a" , "task":{}}}`, ``,
			[]ParamEdit{{Path: []string{"task"}, Delete: true}},
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a" }}`},
		{"delete only", `{"jsonrpc":"2.0","id":1,"method":"m","params":{ "task":{} }}`, `7`,
			[]ParamEdit{{Path: []string{"task"}, Delete: true}},
			`{"jsonrpc":"2.0","id":7,"method":"m","params":{  }}`},
		{"delete nested and two adjacent", `{"jsonrpc":"2.0","method":"m","params":{"_meta":{"a":1,"b":2,"c":3},"x":1,"y":2}}`, ``,
			[]ParamEdit{{Path: []string{"_meta", "c"}, Delete: true}, {Path: []string{"x"}, Delete: true}, {Path: []string{"y"}, Delete: true}},
			`{"jsonrpc":"2.0","method":"m","params":{"_meta":{"a":1,"b":2}}}`},
		{"delete absent and ambiguous skipped", `{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":2}}`, ``,
			[]ParamEdit{{Path: []string{"a"}, Delete: true}, {Path: []string{"b"}, Delete: true}},
			`{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":2}}`},
		{"insert nested in order", `{"jsonrpc":"2.0","method":"m","params":{"name":"t","arguments":{"q":1}}}`, ``,
			[]ParamEdit{{Path: []string{"arguments", "p1"}, With: []byte(`true`), Insert: true}, {Path: []string{"arguments", "p2"}, With: []byte(`"x"`), Insert: true}, {Path: []string{"arguments", "p1"}, With: []byte(`false`), Insert: true}},
			`{"jsonrpc":"2.0","method":"m","params":{"name":"t","arguments":{"p1":true,"p2":"x","q":1}}}`},
		{"insert into empty, parent absent skipped", `{"jsonrpc":"2.0","method":"m","params":{"arguments":{}}}`, ``,
			[]ParamEdit{{Path: []string{"arguments", "p1"}, With: []byte(`1`), Insert: true}, {Path: []string{"arguments", "p2"}, With: []byte(`2`), Insert: true}, {Path: []string{"_meta", "k"}, With: []byte(`3`), Insert: true}},
			`{"jsonrpc":"2.0","method":"m","params":{"arguments":{"p1":1,"p2":2}}}`},
		{"insert where the only member is deleted", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"task":{}}}`, `2`,
			[]ParamEdit{{Path: []string{"task"}, Delete: true}, {Path: []string{"_meta"}, With: []byte(`{"progressToken":2}`), Insert: true}},
			`{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"progressToken":2}}}`},
		{"ambiguous skipped", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","name":"b"}}`, `2`,
			[]ParamEdit{{Path: []string{"name"}, With: []byte(`"x"`)}},
			`{"jsonrpc":"2.0","id":2,"method":"m","params":{"name":"a","name":"b"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			var id []byte
			if tt.id != "" {
				id = []byte(tt.id)
			}
			got := m.AppendWith([]byte("x"), id, tt.edits...)
			if string(got) != "x"+tt.want {
				t.Fatalf("got  %s\nwant x%s", got, tt.want)
			}
			if _, err := Parse(got[1:]); err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
			checkAppendMessage(t, m, id, tt.edits)
		})
	}
}

// checkAppendMessage checks that AppendMessage appends what AppendWith does and returns the message Parse reads
// from those bytes.
func checkAppendMessage(t *testing.T, m Message, id []byte, edits []ParamEdit) {
	t.Helper()
	want := m.AppendWith(nil, id, edits...)
	dst, got := m.AppendMessage([]byte("prefix"), id, edits...)
	if string(dst) != "prefix"+string(want) {
		t.Fatalf("AppendMessage appended %s, AppendWith %s", dst, want)
	}
	p, err := Parse(want)
	if err != nil {
		t.Fatalf("%s does not parse: %v", want, err)
	}
	for _, c := range []struct {
		what      string
		got, want []byte
	}{
		{"raw", got.Raw(), p.Raw()}, {"id", got.ID(), p.ID()}, {"method", []byte(got.Method()), []byte(p.Method())},
		{"params", got.Params(), p.Params()}, {"result", got.Result(), p.Result()}, {"error", got.Error(), p.Error()},
	} {
		if string(c.got) != string(c.want) || (c.got == nil) != (c.want == nil) {
			t.Errorf("AppendMessage of %s: %s = %q, Parse reads %q", m.Raw(), c.what, c.got, c.want)
		}
	}
	if got.Kind() != p.Kind() {
		t.Errorf("AppendMessage of %s: kind %v, Parse reads %v", m.Raw(), got.Kind(), p.Kind())
	}
}

func TestAppendWithNoAlloc(t *testing.T) {
	m, err := Parse(benchRequest())
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		dst = m.AppendWith(dst[:0], []byte(`12345`),
			ParamEdit{Path: []string{"_meta", "progressToken"}, With: []byte(`"gw-1"`)},
			ParamEdit{Path: []string{"name"}, With: []byte(`"search"`)})
	})
	if allocs != 0 {
		t.Errorf("AppendWith allocates %v times", allocs)
	}
	if !json.Valid(dst) {
		t.Error("invalid output")
	}
}

func FuzzSplice(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","_meta":{"progressToken":"t"}}}`), "name", "_meta")
	f.Fuzz(func(t *testing.T, raw []byte, k1, k2 string) {
		m, err := Parse(raw)
		if err != nil {
			return
		}
		out := m.AppendWith(nil, []byte(`"new-id"`),
			ParamEdit{Path: []string{k1}, With: []byte(`"v1"`)},
			ParamEdit{Path: []string{k2, k1}, With: []byte(`[2]`)})
		m2, err := Parse(out)
		if err != nil {
			t.Fatalf("spliced %q -> %q: %v", raw, out, err)
		}
		if string(m2.ID()) != `"new-id"` {
			t.Fatalf("id = %s", m2.ID())
		}
		if m2.Method() != m.Method() {
			t.Fatalf("method changed")
		}
	})
}

// FuzzEditMembers: on a valid object, EditMembers gives valid JSON whose members are the object's, decoded as
// encoding/json decodes them, with k1's dropped and k2's replaced.
func FuzzEditMembers(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":2},"d":3}`), "b", "d")
	f.Add([]byte(` { "a\u0062" : [1, {"ab":2}] , "x":"}" } `), "ab", "x")
	f.Add([]byte(`{"a":1,"a":2,"b":3}`), "a", "c")
	f.Fuzz(func(t *testing.T, obj []byte, k1, k2 string) {
		// encoding/json, the reference, decodes invalid UTF-8 in a name as U+FFFD, which EditMembers does not match.
		if !utf8.Valid(obj) || !utf8.ValidString(k1) || !utf8.ValidString(k2) || k1 == k2 {
			return
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(obj, &in) != nil || in == nil {
			return
		}
		out := EditMembers(obj, []string{k1, k2}, func(k int, v []byte) ([]byte, bool) {
			return []byte(`"new"`), k == 1
		})
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("EditMembers(%q) = %q: %v", obj, out, err)
		}
		delete(in, k1)
		if _, ok := in[k2]; ok {
			in[k2] = json.RawMessage(`"new"`)
		}
		if len(got) != len(in) {
			t.Fatalf("EditMembers(%q) = %q: members %v, want %v", obj, out, got, in)
		}
		for k, v := range in {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(got[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("EditMembers(%q) = %q: member %q is %s, want %s", obj, out, k, got[k], v)
			}
		}
	})
}

func TestSetMember(t *testing.T) {
	for _, tc := range []struct{ name, obj, key, v, want string }{
		{"replace", `{"a":1,"b":2}`, "b", `[3]`, `{"a":1,"b":[3]}`},
		{"insert first", `{"a":1}`, "b", `"x"`, `{"b":"x","a":1}`},
		{"insert into empty", `{ }`, "b", `true`, `{"b":true }`},
		{"keeps the rest byte for byte", `{ "a" : "\u003c" , "b":2}`, "b", `0`, `{ "a" : "\u003c" , "b":0}`},
		{"ambiguous twin left alone", `{"b":1,"B":2}`, "b", `0`, `{"b":1,"B":2}`},
		{"not an object", `[1]`, "b", `0`, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(SetMember([]byte(tc.obj), tc.key, []byte(tc.v))); got != tc.want {
				t.Errorf("SetMember(%s, %q, %s) = %s, want %s", tc.obj, tc.key, tc.v, got, tc.want)
			}
		})
	}
}

func TestDeleteMembers(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		keys      []string
		want      string
	}{
		{"middle", `{"a":1,"b":{"c":2},"d":3}`, []string{"b"}, `{"a":1,"d":3}`},
		{"several", `{"a":1,"b":2,"c":3}`, []string{"a", "c"}, `{"b":2}`},
		{"all", `{"a":1}`, []string{"a"}, `{}`},
		{"none matches: unchanged", `{ "a" : 1 }`, []string{"z"}, `{ "a" : 1 }`},
		{"exact names only", `{"A":1,"a":2}`, []string{"a"}, `{"A":1}`},
		{"empty", `{}`, []string{"a"}, `{}`},
		{"malformed: unchanged", `{"a":}`, []string{"a"}, `{"a":}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(DeleteMembers([]byte(tc.obj), tc.keys...)); got != tc.want {
				t.Errorf("DeleteMembers(%s, %q) = %s, want %s", tc.obj, tc.keys, got, tc.want)
			}
		})
	}
}

// TestEditMembers: named members are replaced, dropped or kept as edit says, in one copy; the others and their
// spacing stay as they were; nothing is copied when nothing changes; a malformed object comes back as it was.
func TestEditMembers(t *testing.T) {
	// upper replaces "a" with 9, drops "b", keeps "c" as it is.
	upper := func(k int, v []byte) ([]byte, bool) {
		switch k {
		case 0:
			return []byte("9"), true
		case 1:
			return nil, false
		}
		return v, true
	}
	keys := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name, obj, want string
		same            bool // the result is obj itself
	}{
		{"replace", `{"x":1,"a":2}`, `{"x":1,"a":9}`, false},
		{"replace first, spacing of the rest", `{ "a" : 2 , "x" : 1 }`, `{"a":9,"x" : 1}`, false},
		{"drop first", `{"b":1,"x":2}`, `{"x":2}`, false},
		{"drop last, spacing before kept", `{"x" : 1 ,"y":2, "b":3}`, `{"x" : 1 ,"y":2}`, false},
		{"drop the only one", `{"b":[1,{"a":2}]}`, `{}`, false},
		{"every occurrence of a name", `{"b":1,"x":2,"b":3}`, `{"x":2}`, false},
		{"kept as it is: no copy", `{ "c" : {"a":1} }`, `{ "c" : {"a":1} }`, true},
		{"no name matches: no copy", `{"x":1}`, `{"x":1}`, true},
		{"nested names are not members", `{"x":{"a":1,"b":2}}`, `{"x":{"a":1,"b":2}}`, true},
		{"exact names only", `{"A":1,"B":2}`, `{"A":1,"B":2}`, true},
		{"empty object", ` {} `, ` {} `, true},
		{"malformed after a change", `{"b":1,"x":}`, `{"b":1,"x":}`, true},
		{"more after the object", `{"b":1} x`, `{"b":1} x`, true},
		{"a second closing brace", `{"b":1}}`, `{"b":1}}`, true},
		{"whitespace after the object", "{\"b\":1} \n", `{}`, false},
		{"not an object", `[1]`, `[1]`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := []byte(tc.obj)
			got := EditMembers(obj, keys, upper)
			if string(got) != tc.want {
				t.Errorf("EditMembers(%s) = %s, want %s", tc.obj, got, tc.want)
			}
			if same := len(got) == len(obj) && &got[0] == &obj[0]; same != tc.same {
				t.Errorf("EditMembers(%s) returned obj itself: %v, want %v", tc.obj, same, tc.same)
			}
			if !tc.same && !json.Valid(got) {
				t.Errorf("EditMembers(%s) = %s: not valid JSON", tc.obj, got)
			}
		})
	}
}

// TestAppendWithInsert: an Insert edit adds its member first in params when params has none of that name, keeps
// params valid whatever its spacing or emptiness, replaces the member where it exists, and is skipped when the
// name is ambiguous or params is not an object.
func TestAppendWithInsert(t *testing.T) {
	meta := ParamEdit{Path: []string{"_meta"}, With: []byte(`{"k":1}`), Insert: true}
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"x"}}`, `{"jsonrpc":"2.0","id":9,"method":"m","params":{"_meta":{"k":1},"name":"x"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, `{"jsonrpc":"2.0","id":9,"method":"m","params":{"_meta":{"k":1}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{ }}`, `{"jsonrpc":"2.0","id":9,"method":"m","params":{"_meta":{"k":1} }}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"old":true},"a":1}}`, `{"jsonrpc":"2.0","id":9,"method":"m","params":{"_meta":{"k":1},"a":1}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":1,"_meta":2}}`, `{"jsonrpc":"2.0","id":9,"method":"m","params":{"_meta":1,"_meta":2}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, `{"jsonrpc":"2.0","id":9,"method":"m","params":[1]}`},
	} {
		m, err := Parse([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		edits := []ParamEdit{{Path: []string{"name"}, With: []byte(`"y"`)}, meta}
		got := m.AppendWith(nil, []byte("9"), edits...)
		checkAppendMessage(t, m, []byte("9"), edits)
		want := strings.Replace(tc.want, `"name":"x"`, `"name":"y"`, 1)
		if string(got) != want {
			t.Errorf("AppendWith(%s)\n got %s\nwant %s", tc.in, got, want)
		}
		if _, err := Parse(got); err != nil {
			t.Errorf("AppendWith(%s) = %s, not a valid message: %v", tc.in, got, err)
		}
	}
}

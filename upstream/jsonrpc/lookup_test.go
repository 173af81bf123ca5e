package jsonrpc

import (
	"encoding/json"
	"testing"
)

func TestLookup(t *testing.T) {
	obj := `{ "name" : "echo", "arguments": {"id": 1, "deep": {"x": [1, "}"]}},
	  "_meta" : { "progressToken" : "tok\"1" } , "e": {} }`
	tests := []struct {
		path []string
		want string // "" means not found
	}{
		{[]string{"name"}, `"echo"`},
		{[]string{"_meta", "progressToken"}, `"tok\"1"`},
		{[]string{"arguments", "deep", "x"}, `[1, "}"]`},
		{[]string{"arguments", "id"}, `1`},
		{[]string{"e"}, `{}`},
		{[]string{}, obj},
		{[]string{"missing"}, ""},
		{[]string{"e", "x"}, ""},
		{[]string{"name", "x"}, ""},                   // not an object
		{[]string{"arguments", "deep", "x", "y"}, ""}, // array
	}
	for _, tt := range tests {
		s, e, ok := Lookup([]byte(obj), tt.path...)
		if tt.want == "" {
			if ok {
				t.Errorf("%v: found %q", tt.path, obj[s:e])
			}
			continue
		}
		if !ok || obj[s:e] != tt.want {
			t.Errorf("%v: got %v %q", tt.path, ok, obj[s:e])
		}
	}
}

func TestLookupAmbiguous(t *testing.T) {
	tests := []struct {
		obj  string
		path []string
		ok   bool
	}{
		{`{"name":"a","name":"b"}`, []string{"name"}, false},
		{`{"name":"a","\u006eame":"b"}`, []string{"name"}, false},
		{`{"name":"a","Name":"b"}`, []string{"name"}, false},
		{`{"Name":"b"}`, []string{"name"}, false},
		{`{"_meta":{"a":1},"_META":{}}`, []string{"_meta", "a"}, false},
		{`{"x":{"a":1,"a":2}}`, []string{"x", "a"}, false},
		{`{"x":{"a":1,"b":{"a":2}}}`, []string{"x", "a"}, true},
		{`{"\u006eame":"b"}`, []string{"name"}, true},
		{`{"name":"a","x":1,}`, []string{"name"}, false}, // garbage after the match
		{`{"name":"a"`, []string{"name"}, false},
		{`{"name":`, []string{"name"}, false},
		{`garbage`, []string{"name"}, false},
		{``, []string{"name"}, false},
	}
	for _, tt := range tests {
		if _, _, ok := Lookup([]byte(tt.obj), tt.path...); ok != tt.ok {
			t.Errorf("Lookup(%s, %v) ok = %v", tt.obj, tt.path, ok)
		}
	}
}

func FuzzLookup(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2]},"c":"d"}`), "a", "b")
	f.Add([]byte(`{"a":1,"A":2}`), "a", "")
	f.Add([]byte(`{"\u0061":{"":3}}`), "a", "")
	f.Fuzz(func(t *testing.T, obj []byte, k1, k2 string) {
		for _, path := range [][]string{{k1}, {k1, k2}, nil} {
			s, e, ok := Lookup(obj, path...)
			if ok && !json.Valid(obj[s:e]) {
				t.Fatalf("Lookup(%q, %q) = %q, not valid JSON", obj, path, obj[s:e])
			}
		}
	})
}

func TestLookupMembers(t *testing.T) {
	obj := []byte(`{ "a" : 1, "b":{"c":2}, "d":"x" }`)
	spans, ok := LookupMembers(obj, "d", "z", "a")
	if !ok || !spans[0].Found || string(obj[spans[0].Start:spans[0].End]) != `"x"` || spans[1].Found ||
		!spans[2].Found || string(obj[spans[2].Start:spans[2].End]) != `1` {
		t.Fatalf("LookupMembers = %v, %v", spans, ok)
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":1,"A":2}`, `[1]`, `{"a":}`, ``} {
		if _, ok := LookupMembers([]byte(bad), "a"); ok {
			t.Errorf("LookupMembers(%s) ok, want not ok (twin or malformed)", bad)
		}
	}
	if spans, ok := LookupMembers([]byte(`{}`), "a"); !ok || spans[0].Found {
		t.Errorf("LookupMembers({}) = %v, %v", spans, ok)
	}
}

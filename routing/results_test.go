package routing

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"testing"
)

// uriMembers is collectURIs by the standard decoder's tokens: every "uri" member with a string value, duplicates
// included, sorted; nil for invalid JSON.
func uriMembers(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	var uris []string
	type frame struct{ object, wantKey bool }
	var stack []frame
	uriNext := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].object && stack[top].wantKey
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].wantKey = true
				}
			}
			uriNext = false
			continue
		case string:
			if isKey {
				uriNext = v == "uri"
				stack[top].wantKey = false
				continue
			}
			if uriNext {
				uris = append(uris, v)
			}
		}
		uriNext = false
		if top >= 0 && stack[top].object {
			stack[top].wantKey = true
		}
	}
	slices.Sort(uris)
	return uris
}

// TestCollectURIs: the byte walk finds exactly the "uri" string members a decoder finds, at any depth, whatever
// their spelling, and nothing inside strings.
func TestCollectURIs(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"link", `{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`},
		{"embedded", `{"content":[{"type":"resource","resource":{"uri":"memory://x","text":"t"}}],"isError":false}`},
		{"escaped key", `{"content":[{"type":"resource_link","\u0075ri":"file:///b"}]}`},
		{"escaped value", `{"content":[{"uri":"file:///a\"b\\\\c\u00e9"}]}`},
		{"uri in text", `{"content":[{"type":"text","text":"\"uri\": \"file:///not\""},{"type":"text","text":"uri"}]}`},
		{"spaces", "{ \"content\" : [ { \"uri\" :\n \"file:///s\" } ] }"},
		{"not a string", `{"uri":{"uri":"inner"},"list":[{"uri":5},{"uri":null}]}`},
		{"none", `{"content":[{"type":"text","text":"resource"}]}`},
		{"deep", `{"a":[[[{"b":{"uri":"x://1"}}]]],"uri":"x://2"}`},
		{"duplicate keys", `{"uri":"a","uri":"b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collectURIs([]byte(tc.in))
			slices.Sort(got)
			if want := uriMembers([]byte(tc.in)); !slices.Equal(got, want) {
				t.Errorf("collectURIs = %q, want %q", got, want)
			}
		})
	}
}

// FuzzCollectURIs: on any valid JSON, the byte walk agrees with the decoder; on anything else it does not panic.
func FuzzCollectURIs(f *testing.F) {
	for _, s := range []string{`{"uri":"a"}`, `{"content":[{"uri":"b","text":"\"uri\":\"c\""}]}`, `{"\u0075ri":"d"}`, `[1,"uri",{"x":{"uri":"e"}}]`, `"uri"`, `{"uri"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := collectURIs(b)
		if !json.Valid(b) {
			return
		}
		slices.Sort(got)
		if want := uriMembers(b); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("collectURIs(%s) = %q, want %q", b, got, want)
		}
	})
}

// TestIsInputRequired: only the result's own resultType, however its string is spelled, asks for input.
func TestIsInputRequired(t *testing.T) {
	for _, tc := range []struct {
		res  string
		want bool
	}{
		{`{"resultType":"input_required","inputRequests":{}}`, true},
		{`{"inputRequests":{},"resultType":"input\u005frequired"}`, true},
		{`{"resultType":"complete","content":[]}`, false},
		{`{"content":[{"type":"text","text":"{\"resultType\":\"input_required\"}"}]}`, false},
		{`{"structuredContent":{"resultType":"input_required"}}`, false},
		{`{"resultType":1}`, false},
		{`{}`, false},
	} {
		if got := isInputRequired([]byte(tc.res)); got != tc.want {
			t.Errorf("isInputRequired(%s) = %v, want %v", tc.res, got, tc.want)
		}
	}
}

package pin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestDuplicateMember: a member name twice in one object is found at any depth and in any spelling that unescapes
// to the same name; the same name in different objects, or as a value, is not a duplicate.
func TestDuplicateMember(t *testing.T) {
	for _, c := range []struct {
		def  string
		want string // "" for none
	}{
		{`{"name":"a","description":"x"}`, ""},
		{`{"name":"a","description":"EVIL","description":"x"}`, "description"},
		{`{"name":"a","description":"EVIL","\u0064escription":"x"}`, "description"},
		{`{"name":"a","d\u0065scription":"EVIL","description":"x"}`, "description"},
		{`{"name":"a","name":"b"}`, "name"},
		{`{"name":"a","inputSchema":{"type":"object","properties":{"p":{"description":"a","description":"b"}}}}`, "description"},
		{`{"name":"a","inputSchema":{"properties":{"p":{}},"properties":{"q":{}}}}`, "properties"},
		{`{"arguments":[{"name":"x"},{"name":"y","required":true,"required":false}]}`, "required"},
		{`{"a":[[{"k":1}],{"k":2,"k":3}]}`, "k"},
		{`{"a":{"x":1},"b":{"x":1},"x":"x"}`, ""},       // one name in sibling objects
		{`{"a":"description","description":"a"}`, ""},   // a value equal to a name
		{`{"a":{},"b":[],"c":{"d":[{}]},"e":null}`, ""}, // empty containers close cleanly
		{`{"A":1,"a":2}`, ""},                                    // names are case-sensitive
		{`{"\ud83d\ude00":1,"😀":2}`, "😀"},                        // a surrogate pair is its character
		{`{"a\u0000":1,"a":2}`, ""},                              // NUL is a character like any other
		{`[{"x":1},{"x":1}]`, ""},                                // array elements are separate objects
		{`"just a string"`, ""},                                  // not an object
		{`{"a":1,`, ""},                                          // not JSON: whoever parses it says so
		{`{"description":"x","description":"x"}`, "description"}, // twice the same value is still twice
	} {
		got, found := DuplicateMember([]byte(c.def))
		if found != (c.want != "") || got != c.want {
			t.Errorf("DuplicateMember(%s) = %q, %v; want %q", c.def, got, found, c.want)
		}
	}
}

// TestHashRefusesDuplicates: a definition with a member twice has no pin: whichever member a hash took, a client's
// parser might keep the other.
func TestHashRefusesDuplicates(t *testing.T) {
	def := `{"name":"read","description":"EVIL","description":"Reads a file.","inputSchema":{"type":"object"}}`
	if h, err := Hash(Tool, []byte(def)); err == nil || !strings.Contains(err.Error(), `"description"`) {
		t.Errorf("Hash of a definition with its description twice = %q, %v; want an error naming the member", h, err)
	}
}

// FuzzDuplicateMember compares DuplicateMember with a reading by encoding/json: a value without duplicates
// decodes to maps whose member counts match the names the raw text has per object, so encoding it back and
// checking again must agree; and a duplicate built by re-spelling one name with escapes is always found.
func FuzzDuplicateMember(f *testing.F) {
	f.Add(`{"name":"a","description":"x"}`, "description")
	f.Add(`{"a":{"b":[{"c":1}]}}`, "b")
	f.Add(`{"\u00e9":1}`, "é")
	f.Fuzz(func(t *testing.T, def, name string) {
		// No false positive: encoding/json's output of a decoded value never repeats a member.
		var v any
		if json.Unmarshal([]byte(def), &v) == nil {
			clean, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got, found := DuplicateMember(clean); found {
				t.Errorf("DuplicateMember(%s) found %q in encoding/json's own output", clean, got)
			}
		}
		// No false negative: the name written plainly and then with every character escaped.
		plain, err := json.Marshal(name)
		if err != nil {
			t.Skip()
		}
		var escaped bytes.Buffer
		escaped.WriteByte('"')
		var back string
		if json.Unmarshal(plain, &back) != nil {
			t.Skip()
		}
		for _, u := range utf16Units(back) {
			escaped.WriteString(`\u`)
			escaped.WriteString(hex4(u))
		}
		escaped.WriteByte('"')
		obj := `{"x":{` + string(plain) + `:1,"other":[` + def + `],` + escaped.String() + `:2}}`
		if !json.Valid([]byte(obj)) {
			return // def is not JSON: the object is not either
		}
		got, found := DuplicateMember([]byte(obj))
		if !found {
			t.Errorf("DuplicateMember(%s) found nothing; want %q", obj, back)
		}
		_ = got // def may hold a duplicate of its own, found first
	})
}

func utf16Units(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

func hex4(u uint16) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[u>>12], digits[u>>8&0xF], digits[u>>4&0xF], digits[u&0xF]})
}

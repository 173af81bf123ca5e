package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDuplicateMemberSpellings compares DuplicateMember with a reading by encoding/json: a value without duplicates
// decodes to maps whose member counts match the names the raw text has per object, so encoding it back and
// checking again must agree; and a duplicate built by re-spelling one name with escapes is always found.
func FuzzDuplicateMemberSpellings(f *testing.F) {
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
			escaped.WriteString(hex4u(u))
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

func hex4u(u uint16) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[u>>12], digits[u>>8&0xF], digits[u>>4&0xF], digits[u&0xF]})
}

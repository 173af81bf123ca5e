package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestUnquote(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`""`, "", true},
		{`"abc"`, "abc", true},
		{`"a\"b"`, `a"b`, true},
		{`"a\u0022b"`, `a"b`, true},
		{`"\\\/\b\f\n\r\t"`, "\\/\b\f\n\r\t", true},
		{`"\u00e9\u4e16"`, "é世", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\uD83D\uDE00"`, "😀", true},
		{`"\ud83d"`, "\ufffd", true},
		{`"\ude00x"`, "\ufffdx", true},
		{`"\ud83d\u0041"`, "\ufffdA", true},
		{"\"a\xffb\"", "a\ufffdb", true},
		{`"abc`, "", false},
		{`abc`, "", false},
		{`"a"b`, "", false},
		{`"\x"`, "", false},
		{`"\u12"`, "", false},
		{"\"\x01\"", "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		got, err := Unquote([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("Unquote(%s) = %q, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrParse) {
			t.Errorf("Unquote(%s) err %v not ErrParse", tt.in, err)
		}
		// PlainString answers for exactly the valid strings Unquote would copy as they are.
		content, plain := PlainString([]byte(tt.in))
		if wantPlain := tt.ok && !bytes.ContainsRune([]byte(tt.in), '\\') && utf8.ValidString(tt.in); plain != wantPlain || plain && string(content) != tt.want {
			t.Errorf("PlainString(%s) = %q, %v; want plain %v", tt.in, content, plain, wantPlain)
		}
		if tt.ok {
			var std string
			if json.Unmarshal([]byte(tt.in), &std) == nil && std != got {
				t.Errorf("Unquote(%s) = %q, encoding/json says %q", tt.in, got, std)
			}
		}
	}
}

func TestAppendQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"\n\r\t\b\f\x00\x1f", `"\n\r\t\b\f\u0000\u001f"`},
		{"é世😀", `"é世😀"`},
		{"a\xffb", "\"a\ufffdb\""},
		{"\xed\xa0\x80", "\"\ufffd\ufffd\ufffd\""}, // encoded surrogate is invalid UTF-8
	}
	for _, tt := range tests {
		got := AppendQuote([]byte("x"), tt.in)
		if string(got) != "x"+tt.want {
			t.Errorf("AppendQuote(%q) = %s, want %s", tt.in, got[1:], tt.want)
		}
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("a\"\\\x00\xff😀")
	f.Fuzz(func(t *testing.T, s string) {
		q := AppendQuote(nil, s)
		if !json.Valid(q) {
			t.Fatalf("AppendQuote(%q) = %s, invalid", s, q)
		}
		got, err := Unquote(q)
		if err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		var std string
		if err := json.Unmarshal(q, &std); err != nil || std != got {
			t.Fatalf("encoding/json %q vs %q (%v)", std, got, err)
		}
	})
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"42", 42, true},
		{"-32601", -32601, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false},
		{"1e3", 0, false},
		{"1.0", 0, false},
		{`"1"`, 0, false},
		{"01", 0, false},
		{"-", 0, false},
		{"", 0, false},
		{" 1", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseInt([]byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseInt(%q) = %d, %v", tt.in, got, ok)
		}
	}
	for _, n := range []int64{0, -1, 1 << 62, -1 << 63} {
		if got, ok := ParseInt(AppendInt(nil, n)); !ok || got != n {
			t.Errorf("AppendInt/ParseInt %d -> %d", n, got)
		}
	}
}

func TestCompact(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{" {\n \"a\" :\t[ 1 , 2 ] ,\r\n\"b\": \" x \\\" y \" }\n", `{"a":[1,2],"b":" x \" y "}`},
		{`"a\\" `, `"a\\"`},
		{`["\\\"  ", "  "]`, `["\\\"  ","  "]`},
	}
	for _, tt := range tests {
		if got := string(Compact([]byte("x"), []byte(tt.in))); got != "x"+tt.want {
			t.Errorf("Compact(%q) = %q", tt.in, got)
		}
	}
}

func FuzzCompact(f *testing.F) {
	f.Add([]byte(` { "a" : [ 1 , "b c" ] } `))
	f.Fuzz(func(t *testing.T, src []byte) {
		got := Compact(nil, src)
		if !json.Valid(src) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, src); err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("Compact(%q) = %q, want %q", src, got, want.String())
		}
	})
}

func TestPlain8(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	for _, fill := range []byte{'a', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x7f, 0x80, 0xff} {
		for p := 0; p < 8; p++ {
			for c := 0; c < 256; c++ {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[p] = byte(c)
				want := true
				for _, x := range b {
					want = want && !special(x)
				}
				got := plain8(binary.LittleEndian.Uint64(b[:]))
				if got && !want {
					t.Fatalf("plain8(%q) = true, want false", b)
				}
				if !got && want && fill != 0x00 && fill != 0x1f {
					// False positives are allowed but should be rare;
					// none occur for bytes without specials.
					t.Errorf("plain8(%q) = false for plain bytes", b)
				}
			}
		}
	}
}

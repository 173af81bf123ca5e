// Package jcs writes JSON in the canonical form of RFC 8785 (JSON Canonicalization Scheme): members sorted by
// the UTF-16 code units of their keys, no whitespace, strings with minimal escaping, numbers as ECMAScript writes
// doubles. It is the project's one canonical JSON: the audit chain hashes records in it (auth), pins hash
// definitions in it (routing/pin), and the stateless pool keys capability objects by it (routing).
//
// It lives under auth, and imports nothing of ours, because auth imports nothing outside auth; routing and
// routing/pin import it as the leaf it is.
package jcs

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Member is a member of a parsed JSON object.
type Member struct {
	Key   string
	Value any // Object, []any, string, json.Number, bool or nil
}

// Object is a parsed JSON object: its members in the order written, no key twice.
type Object []Member

// Get returns the value of key, nil when absent.
func (o Object) Get(key string) any {
	for _, m := range o {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// Parse parses one JSON value and nothing after it: an object as an Object, an array as []any, a number as the
// json.Number written. A value with a member name twice in one object (after unescaping), at any depth, has no
// canonical form, as it could be read two ways: Parse refuses it.
func Parse(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	v, err := parseValue(d, tok)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more after the JSON value")
	}
	return v, nil
}

// parseValue parses the value that starts with tok.
func parseValue(d *json.Decoder, tok json.Token) (any, error) {
	switch tok {
	case json.Delim('{'):
		members := Object{}
		seen := map[string]bool{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			key, _ := k.(string)
			if seen[key] {
				return nil, fmt.Errorf("the key %q appears twice", key)
			}
			seen[key] = true
			t, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(d, t)
			if err != nil {
				return nil, err
			}
			members = append(members, Member{key, v})
		}
		if _, err := d.Token(); err != nil { // '}'
			return nil, err
		}
		return members, nil
	case json.Delim('['):
		items := []any{}
		for d.More() {
			t, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(d, t)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		if _, err := d.Token(); err != nil { // ']'
			return nil, err
		}
		return items, nil
	}
	return tok, nil
}

// Transform returns the canonical form of one JSON value (see Parse and Append).
func Transform(b []byte) ([]byte, error) {
	v, err := Parse(b)
	if err != nil {
		return nil, err
	}
	return Append(nil, v)
}

// Append appends v, as Parse returns it, in its canonical form. A number beyond a double's range has none.
func Append(b []byte, v any) ([]byte, error) { return appendValue(b, v, false) }

// AppendExact is Append, except that a number a double cannot hold without a change of value (9007199254740993,
// which RFC 8785 writes as 9007199254740992, or 1e400) is written as it was written. RFC 8785 leaves such numbers
// out (they are not I-JSON); a hash over definitions must still change when their digits do.
func AppendExact(b []byte, v any) ([]byte, error) { return appendValue(b, v, true) }

func appendValue(b []byte, v any, exact bool) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case Object:
		sorted := slices.SortedFunc(slices.Values(v), func(x, y Member) int { return Compare(x.Key, y.Key) })
		b = append(b, '{')
		for i, m := range sorted {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, m.Key)
			b = append(b, ':')
			if b, err = appendValue(b, m.Value, exact); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, item := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, item, exact); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case string:
		return AppendString(b, v), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		switch {
		case exact && (err != nil || !sameValue(string(v), f)):
			return append(b, v...), nil
		case err != nil || math.IsInf(f, 0):
			return nil, fmt.Errorf("the number %s is out of range", v)
		}
		return AppendNumber(b, f), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case nil:
		return append(b, "null"...), nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}

// sameValue reports whether the number written as lit has the value AppendNumber writes for f, its nearest double.
func sameValue(lit string, f float64) bool {
	canon := AppendNumber(nil, f)
	if string(canon) == lit {
		return true
	}
	var x, y big.Rat
	_, okx := x.SetString(lit)
	_, oky := y.SetString(string(canon))
	return okx && oky && x.Cmp(&y) == 0
}

// AppendString appends s as RFC 8785 writes a string: only '"', '\\' and the control characters are escaped,
// with the short escapes where JSON has them and \u00xx (lower-case hex) for the rest. s is valid UTF-8.
func AppendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(b, '"')
}

// AppendNumber appends f as RFC 8785 writes a number, which is ECMAScript's Number.prototype.toString: the
// shortest decimal that reads back as f, in plain notation from 1e-6 up to 1e21 and in exponent notation (1e-7,
// 1e+21) outside, and 0 for -0. It is what encoding/json writes for a float64 too.
func AppendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Go writes e-07 where ECMAScript writes e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// Compare orders strings by their UTF-16 code units, as RFC 8785 sorts object members.
func Compare(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			// A rune above U+FFFF starts with a high surrogate (U+D800..U+DBFF), which sorts below U+E000..U+FFFF.
			if ha, hb := firstUTF16(ra), firstUTF16(rb); ha != hb {
				return cmp.Compare(ha, hb)
			}
			return cmp.Compare(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// firstUTF16 is the first UTF-16 code unit of r.
func firstUTF16(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

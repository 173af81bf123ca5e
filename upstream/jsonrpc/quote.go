package jsonrpc

import (
	"unicode"
	"unicode/utf8"
)

// decodeRune decodes one character of the contents of a validated JSON
// string literal (without quotes) at s[i], resolving escapes. Like
// encoding/json it yields U+FFFD for invalid UTF-8 and lone surrogates.
func decodeRune(s []byte, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		if c != '\\' {
			return rune(c), 1
		}
		if i+1 >= len(s) {
			return utf8.RuneError, 1
		}
		switch s[i+1] {
		case 'b':
			return '\b', 2
		case 'f':
			return '\f', 2
		case 'n':
			return '\n', 2
		case 'r':
			return '\r', 2
		case 't':
			return '\t', 2
		case 'u':
			r := hex4(s, i+2)
			if r < 0 {
				return utf8.RuneError, 2
			}
			if 0xD800 <= r && r < 0xDC00 {
				if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
					if r2 := hex4(s, i+8); 0xDC00 <= r2 && r2 < 0xE000 {
						return (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000, 12
					}
				}
				return utf8.RuneError, 6
			}
			if 0xDC00 <= r && r < 0xE000 {
				return utf8.RuneError, 6
			}
			return r, 6
		default: // '"', '\\', '/'
			return rune(s[i+1]), 2
		}
	}
	return utf8.DecodeRune(s[i:])
}

// hex4 parses four hex digits at s[i:], or returns -1.
func hex4(s []byte, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range s[i : i+4] {
		v := hexVal(c)
		if v < 0 {
			return -1
		}
		r = r<<4 | rune(v)
	}
	return r
}

// keyMatch compares the contents of a validated JSON string literal (without
// quotes) with name. exact reports equality after unescaping; fold reports
// equality under Unicode simple case folding, the rule encoding/json uses to
// match object keys to struct fields.
func keyMatch(raw []byte, name string) (exact, fold bool) {
	exact = true
	i, j := 0, 0
	for i < len(raw) && j < len(name) {
		var r rune
		var n int
		if c := raw[i]; c < utf8.RuneSelf && c != '\\' {
			r, n = rune(c), 1
		} else {
			r, n = decodeRune(raw, i)
		}
		i += n
		s, m := rune(name[j]), 1
		if s >= utf8.RuneSelf {
			s, m = utf8.DecodeRuneInString(name[j:])
		}
		j += m
		if r == s {
			continue
		}
		exact = false
		if !foldEq(r, s) {
			return false, false
		}
	}
	if i < len(raw) || j < len(name) {
		return false, false
	}
	return exact, true
}

// foldEq reports whether r and s are equal under simple case folding; it is
// the per-rune step of strings.EqualFold.
func foldEq(r, s rune) bool {
	if r == s {
		return true
	}
	if r < s {
		r, s = s, r
	}
	if r < utf8.RuneSelf {
		return 'A' <= s && s <= 'Z' && r == s+'a'-'A'
	}
	f := unicode.SimpleFold(s)
	for f != s && f < r {
		f = unicode.SimpleFold(f)
	}
	return f == r
}

// rawEqual reports whether two validated string contents are equal after
// unescaping.
func rawEqual(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		r, n := decodeRune(a, i)
		s, m := decodeRune(b, j)
		if r != s {
			return false
		}
		i += n
		j += m
	}
	return i == len(a) && j == len(b)
}

// PlainString returns the content of the JSON string literal s, quotes included in s, when it holds no escape
// and only valid UTF-8: exactly the bytes Unquote would make its string of. A caller that only compares or looks
// the string up (m[string(b)]) then makes no string at all. ok is false for any other s.
func PlainString(s []byte) (content []byte, ok bool) {
	body, esc, err := stringBody(s)
	if err != nil || esc || !utf8.Valid(body) {
		return nil, false
	}
	return body, true
}

// stringBody is what lies between the quotes of the JSON string literal s, whose whole s must be, scanned once;
// esc says whether it holds an escape.
func stringBody(s []byte) (body []byte, esc bool, err error) {
	if len(s) == 0 || s[0] != '"' {
		return nil, false, syntaxErr(0, "expected string")
	}
	end, esc, err := scanString(s, 0)
	if err != nil {
		return nil, false, err
	}
	if end != len(s) {
		return nil, false, syntaxErr(end, "data after string")
	}
	return s[1 : end-1], esc, nil
}

// Unquote converts a JSON string literal, including its quotes, to a Go
// string. It resolves all escapes including surrogate pairs and, like
// encoding/json, replaces invalid UTF-8 and lone surrogates with U+FFFD.
func Unquote(s []byte) (string, error) {
	body, esc, err := stringBody(s)
	if err != nil {
		return "", err
	}
	if !esc && utf8.Valid(body) {
		return string(body), nil
	}
	buf := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		r, n := decodeRune(body, i)
		buf = utf8.AppendRune(buf, r)
		i += n
	}
	return string(buf), nil
}

// AppendQuote appends s as a JSON string literal. It escapes '"', '\\' and
// control characters, keeps valid UTF-8 as is and replaces invalid UTF-8 with
// U+FFFD so that the output is always valid JSON text.
func AppendQuote(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

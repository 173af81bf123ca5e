package jsonrpc

import "encoding/binary"

// MaxDepth is the deepest nesting of arrays and objects that the scanner
// accepts. It matches encoding/json so that both agree on what is valid, and
// bounds the work and memory an attacker can force without recursion.
const MaxDepth = 10000

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString validates the string literal starting at b[i] == '"' and returns
// the index just past its closing quote and whether it contains escapes.
func scanString(b []byte, i int) (int, bool, error) {
	start := i
	i++
	esc := false
	for i < len(b) {
		// Skip 8 plain bytes at a time: string bodies dominate messages.
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, syntaxErr(i, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, syntaxErr(i, "truncated \\u escape")
				}
				for _, h := range b[i+2 : i+6] {
					if hexVal(h) < 0 {
						return 0, false, syntaxErr(i, "invalid \\u escape")
					}
				}
				i += 6
			default:
				return 0, false, syntaxErr(i, "invalid escape")
			}
		case c < 0x20:
			return 0, false, syntaxErr(i, "control character in string")
		default:
			i++
		}
	}
	return 0, false, syntaxErr(start, "unterminated string")
}

// plain8 reports whether none of the 8 bytes packed in v is '"', '\\' or a
// control character, using the classic SWAR zero-byte test. The test has no
// false negatives; a rare false positive merely falls back to the byte loop.
func plain8(v uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := v ^ (lo * '"')
	s := v ^ (lo * '\\')
	t := (q - lo) &^ q
	t |= (s - lo) &^ s
	t |= (v - lo*0x20) &^ v
	return t&hi == 0
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber validates the number starting at b[i] and returns its end. The
// byte after the number is checked by the caller's grammar.
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, syntaxErr(start, "truncated number")
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i++
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, syntaxErr(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, syntaxErr(i, "invalid number fraction")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, syntaxErr(i, "invalid number exponent")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, syntaxErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

// scanValue validates the JSON value starting at or after b[i] (leading
// whitespace is skipped) and returns the index just past it. depth is the
// nesting depth of the enclosing context. It is iterative so that hostile
// nesting cannot overflow the stack; the first 256 levels are tracked in a
// stack-allocated bit set so that ordinary messages cost no allocation.
func scanValue(b []byte, i int, depth int) (int, error) {
	return scanValueKeys(b, i, depth, nil)
}

// scanValueKeys is scanValue that also reports every object's opening, keys and closing to u, when u is not nil:
// the duplicate check rides on the one scan that validates.
func scanValueKeys(b []byte, i int, depth int, u *uniqueKeys) (int, error) {
	var small [4]uint64
	isObj := small[:] // bit n set: container n (0-based, this call) is an object
	n := 0            // open containers in this call

	push := func(obj bool) {
		w := n / 64
		if w >= len(isObj) {
			isObj = append(isObj, 0)
		}
		if obj {
			isObj[w] |= 1 << (n % 64)
		} else {
			isObj[w] &^= 1 << (n % 64)
		}
		n++
	}
	top := func() bool { return isObj[(n-1)/64]&(1<<((n-1)%64)) != 0 }

	var err error
	for {
		// Parse one value (or open a container) at i.
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, syntaxErr(i, "unexpected end of input")
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth+n+1 > MaxDepth {
				return 0, syntaxErr(i, "nesting too deep")
			}
			push(c == '{')
			i = skipWS(b, i+1)
			if i >= len(b) {
				return 0, syntaxErr(i, "unexpected end of input")
			}
			if (c == '{' && b[i] == '}') || (c == '[' && b[i] == ']') {
				n--
				i++
				break
			}
			if c == '{' {
				if u != nil {
					u.open()
				}
				if i, err = scanKeyTo(b, i, u); err != nil {
					return 0, err
				}
			}
			continue
		case c == '"':
			if i, _, err = scanString(b, i); err != nil {
				return 0, err
			}
		case c == '-' || isDigit(c):
			if i, err = scanNumber(b, i); err != nil {
				return 0, err
			}
		case c == 't':
			if i, err = scanLiteral(b, i, "true"); err != nil {
				return 0, err
			}
		case c == 'f':
			if i, err = scanLiteral(b, i, "false"); err != nil {
				return 0, err
			}
		case c == 'n':
			if i, err = scanLiteral(b, i, "null"); err != nil {
				return 0, err
			}
		default:
			return 0, syntaxErr(i, "invalid character")
		}
		// A value ended: close containers or move to the next element.
	after:
		for {
			if n == 0 {
				return i, nil
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, syntaxErr(i, "unexpected end of input")
			}
			obj := top()
			switch b[i] {
			case ',':
				i++
				if obj {
					if i, err = scanKeyTo(b, skipWS(b, i), u); err != nil {
						return 0, err
					}
				}
				break after
			case '}':
				if !obj {
					return 0, syntaxErr(i, "unexpected '}'")
				}
				if u != nil {
					u.close()
				}
				n--
				i++
			case ']':
				if obj {
					return 0, syntaxErr(i, "unexpected ']'")
				}
				n--
				i++
			default:
				return 0, syntaxErr(i, "expected ',' or end of container")
			}
		}
	}
}

// scanKeyTo validates `"key" :` at b[i] and returns the index after the colon; the key goes to u, when u is not
// nil.
func scanKeyTo(b []byte, i int, u *uniqueKeys) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, syntaxErr(i, "expected object key")
	}
	ks := i
	i, esc, err := scanString(b, i)
	if err != nil {
		return 0, err
	}
	if u != nil {
		u.key(b, ks+1, i-1, esc)
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, syntaxErr(i, "expected ':'")
	}
	return i + 1, nil
}

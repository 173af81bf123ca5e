package jsonrpc

import "unicode/utf8"

// A peer decoding with encoding/json (or JSON.parse) keeps the last of two members of one name, so an object
// with a name twice lets the gateway check one member while the upstream acts on the other: a preset checked on
// the first "arguments" and overridden by the second, a pin hashed over the last "description" while the first
// reaches the client. RFC 8259 §4: "The names within an object SHOULD be unique"; where they are not, "the
// behavior of software that receives such an object is unpredictable". Every object the gateway reads or edits
// must therefore hold each name once, compared after unescaping ("\u0061rguments" is "arguments").

// smallObject is how many keys an object may have before its duplicate check moves from comparing each new key
// with those before it to a set: it bounds the pairwise work a hostile object can force.
const smallObject = 16

// keyRef is one object key: the span of its contents (without quotes) in the scanned bytes.
type keyRef struct {
	start, end uint32
	esc        bool
	plain      bool // no escape and ASCII only: equal to another plain key exactly when its bytes are
}

// keyFrame is one open object: where its keys begin in uniqueKeys.keys, and, past smallObject keys, the set of
// its names.
type keyFrame struct {
	first int
	set   map[string]struct{}
}

// uniqueKeys follows a scan (scanValueKeys) and records the first key that repeats a key of its own object.
type uniqueKeys struct {
	keys   smallStack[keyRef]   // the keys of the open objects, innermost last
	frames smallStack[keyFrame] // the open objects
	dup    keyRef
	found  bool
}

func (u *uniqueKeys) open() { u.frames.push(keyFrame{first: u.keys.n}) }

func (u *uniqueKeys) close() {
	u.keys.truncate(u.frames.at(u.frames.n - 1).first)
	u.frames.truncate(u.frames.n - 1)
}

// key records one key of the innermost open object, b[start:end] being its contents.
func (u *uniqueKeys) key(b []byte, start, end int, esc bool) {
	if u.found {
		return
	}
	kb := b[start:end]
	k := keyRef{start: uint32(start), end: uint32(end), esc: esc, plain: !esc && !hasNonASCII(kb)}
	f := u.frames.at(u.frames.n - 1)
	if f.set != nil {
		name := keyString(b[start:end], esc)
		if _, ok := f.set[name]; ok {
			u.dup, u.found = k, true
		}
		f.set[name] = struct{}{}
		return
	}
	for i := f.first; i < u.keys.n; i++ {
		o := u.keys.at(i)
		ob := b[o.start:o.end]
		if k.plain && o.plain {
			if string(kb) == string(ob) {
				u.dup, u.found = k, true
				return
			}
			continue
		}
		if rawEqual(kb, ob) {
			u.dup, u.found = k, true
			return
		}
	}
	u.keys.push(k)
	if u.keys.n-f.first > smallObject {
		f.set = make(map[string]struct{}, 2*smallObject)
		for i := f.first; i < u.keys.n; i++ {
			o := u.keys.at(i)
			f.set[keyString(b[o.start:o.end], o.esc)] = struct{}{}
		}
	}
}

// smallStack is a stack that lives in its own array until it outgrows it: an ordinary message's scan then
// allocates nothing.
type smallStack[T any] struct {
	small [16]T
	big   []T // all of it, once it outgrew small
	n     int
}

func (s *smallStack[T]) push(v T) {
	switch {
	case s.big != nil:
		s.big = append(s.big, v)
	case s.n < len(s.small):
		s.small[s.n] = v
	default:
		s.big = append(append(make([]T, 0, 2*len(s.small)), s.small[:]...), v)
	}
	s.n++
}

// at returns a pointer to element i, valid until the next push.
func (s *smallStack[T]) at(i int) *T {
	if s.big != nil {
		return &s.big[i]
	}
	return &s.small[i]
}

func (s *smallStack[T]) truncate(n int) {
	s.n = n
	if s.big != nil {
		s.big = s.big[:n]
	}
}

// keyString is a key's contents unescaped, invalid UTF-8 turned into U+FFFD as a decoder would.
func keyString(raw []byte, esc bool) string {
	if !esc && utf8.Valid(raw) {
		return string(raw)
	}
	buf := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		r, n := decodeRune(raw, i)
		buf = utf8.AppendRune(buf, r)
		i += n
	}
	return string(buf)
}

// DuplicateMember reports the first member name that appears twice in one object (after unescaping) anywhere
// in the JSON value v, which must be valid JSON (a scan error reports none). It is how the gateway finds an
// upstream's definition that would hash as one thing and be served as another.
func DuplicateMember(v []byte) (name string, found bool) {
	var u uniqueKeys
	if _, err := scanValueKeys(v, skipWS(v, 0), 0, &u); err != nil || !u.found {
		return "", false
	}
	return keyString(v[u.dup.start:u.dup.end], u.dup.esc), true
}

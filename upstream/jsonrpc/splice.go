package jsonrpc

// Edit replaces Src[Start:End] with With in a Splice.
type Edit struct {
	Start, End int
	With       []byte
}

// Splice appends src with edits applied to dst and returns the extended
// slice. Edits must lie within src, be sorted by Start and must not overlap
// (an insertion, Start == End, may touch a neighbour); Splice panics
// otherwise, because that is a programming error rather than bad input.
// dst must not overlap src.
func Splice(dst, src []byte, edits ...Edit) []byte {
	pos := 0
	for _, e := range edits {
		if e.Start < pos || e.End < e.Start || e.End > len(src) {
			panic("jsonrpc: Splice edits out of range, unsorted or overlapping")
		}
		dst = append(dst, src[pos:e.Start]...)
		dst = append(dst, e.With...)
		pos = e.End
	}
	return append(dst, src[pos:]...)
}

// ParamEdit replaces the value at Path inside params with With (raw JSON,
// which the caller must ensure is valid), or deletes the member at Path.
// Path must be non-empty.
type ParamEdit struct {
	Path []string
	With []byte
	// Insert adds the member as the first of its object (the object at
	// Path[:len(Path)-1], which must exist) when that object has none of
	// its name: so that a message needing a new member (a _meta, a preset
	// argument) is still built in one splice. Several inserts into one
	// object go in the order given; a second of the same name is skipped.
	Insert bool
	// Delete removes the member at Path, its name, its value and one comma
	// beside it; With is ignored. An absent member is nothing to delete.
	Delete bool
}

// AppendWithID appends the message with its id replaced by id (raw JSON: a
// string or number literal) and returns the extended slice. If the message
// has no id, `"id":<id>,` is inserted after the opening brace. A nil id
// appends the message unchanged.
func (m Message) AppendWithID(dst, id []byte) []byte {
	return m.AppendWith(dst, id)
}

// maxInlineEdits is how many edits AppendWith sorts without allocating.
const maxInlineEdits = 8

// pendingEdit refers to its replacement by index instead of holding the
// slice, so that the edit list holds no pointers and the caller's id and
// ParamEdit values do not escape to the heap.
type pendingEdit struct {
	start, end int
	src        int  // editID, editInsertID or an index into the ParamEdits
	member     bool // insert the ParamEdit as a new member: "key":value
	comma      bool // and a comma after it (params has other members)
	last       bool // a deletion of its object's last member: the comma before it goes too
}

const (
	editID       = -1
	editInsertID = -2
)

// AppendWith appends the message with its id replaced (if id != nil, as in
// AppendWithID) and each ParamEdit applied to params. A ParamEdit is skipped
// when With is nil, when the message has no params, when the member at Path
// does not exist or is ambiguous (see Lookup), or when it overlaps the span
// of an earlier edit (for example a path nested inside another edited path).
// Use it for: new id + params.name; new id + params._meta.progressToken;
// params.progressToken in progress notifications; params.requestId in
// cancellations. Replacement bytes are copied verbatim and must be valid
// JSON. It does not allocate when dst has enough capacity and the id plus
// the applicable ParamEdits number at most 8.
func (m Message) AppendWith(dst, id []byte, edits ...ParamEdit) []byte {
	return m.appendWith(dst, id, edits, nil)
}

// AppendMessage is AppendWith that also returns the appended message, parsed: its members' spans are the
// original's moved by the edits, so that a message built by splicing needs no second Parse. The message aliases
// the appended bytes. A message given an id it lacked is parsed again.
func (m Message) AppendMessage(dst, id []byte, edits ...ParamEdit) ([]byte, Message) {
	var out Message
	dst = m.appendWith(dst, id, edits, &out)
	return dst, out
}

// appendWith is AppendWith; with out set, it also sets *out to the appended message.
func (m Message) appendWith(dst, id []byte, edits []ParamEdit, out *Message) []byte {
	var inline [maxInlineEdits]pendingEdit
	es := inline[:0]
	if id != nil {
		if m.id.ok() {
			es = append(es, pendingEdit{start: int(m.id.start), end: int(m.id.end), src: editID})
		} else if len(m.raw) > 0 {
			// Insert "id":<id>, after '{'; a valid message always has a
			// "jsonrpc" member after it, so the comma is correct.
			open := skipWS(m.raw, 0) + 1
			es = append(es, pendingEdit{start: open, end: open, src: editInsertID})
		}
	}
	if params := m.Params(); params != nil {
		base := int(m.params.start)
	next:
		for k, pe := range edits {
			if pe.With == nil && !pe.Delete || len(pe.Path) == 0 {
				continue
			}
			pending, ok := paramEdit(params, pe)
			if !ok {
				continue
			}
			pending.start, pending.end, pending.src = pending.start+base, pending.end+base, k
			for _, o := range es {
				if pending.start < o.end && o.start < pending.end {
					continue next
				}
				if pending.member && o.member && pending.start == o.start && lastName(edits, o.src) == pe.Path[len(pe.Path)-1] {
					continue next // the same member inserted twice
				}
			}
			es = append(es, pending)
		}
	}
	// Insertion sort: there are only a handful of edits. Inserts at one point keep their order and go before a
	// deletion that starts there.
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && (es[j].start < es[j-1].start || es[j].start == es[j-1].start && es[j].member && !es[j-1].member); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	// An insert is followed by a comma when another insert follows it at the same point.
	for k := 0; k+1 < len(es); k++ {
		if es[k].member && es[k+1].member && es[k+1].start == es[k].start {
			es[k].comma = true
		}
	}
	base, pos := len(dst), 0
	var deltas [maxInlineEdits]int
	for k, e := range es {
		dst = append(dst, m.raw[pos:e.start]...)
		before := len(dst)
		switch e.src {
		case editID:
			dst = append(dst, id...)
		case editInsertID:
			dst = append(dst, `"id":`...)
			dst = append(dst, id...)
			dst = append(dst, ',')
		default:
			if e.last {
				// The deleted member was its object's last: the comma that separated it from the kept one
				// before it (copied, or an insert's) goes too.
				dst = trimComma(dst, base) // counted in the edit's delta: before was taken first
			}
			if e.member {
				dst = append(AppendQuote(dst, lastName(edits, e.src)), ':')
			}
			if !edits[e.src].Delete {
				dst = append(dst, edits[e.src].With...)
			}
			if e.comma {
				dst = append(dst, ',')
			}
		}
		pos = e.end
		if k < maxInlineEdits {
			deltas[k] = len(dst) - before - (e.end - e.start)
		}
	}
	dst = append(dst, m.raw[pos:]...)
	if out != nil {
		*out = m.moved(dst[base:], es, deltas[:])
	}
	return dst
}

// paramEdit finds where in params pe applies: the value to replace, the point to insert the member at, or the
// member to delete. ok is false when pe does not apply.
func paramEdit(params []byte, pe ParamEdit) (e pendingEdit, ok bool) {
	if pe.Delete {
		s, end, next, st := memberExtent(params, pe.Path)
		if st != Found {
			return e, false
		}
		if next < 0 {
			return pendingEdit{start: s, end: end, last: true}, true
		}
		return pendingEdit{start: s, end: next}, true
	}
	s, end, st := LookupStatus(params, pe.Path...)
	switch {
	case st == Found:
		return pendingEdit{start: s, end: end}, true
	case st != Absent || !pe.Insert:
		return e, false
	}
	os, _, pst := LookupStatus(params, pe.Path[:len(pe.Path)-1]...)
	if pst != Found || params[os] != '{' {
		return e, false
	}
	open := os + 1
	return pendingEdit{start: open, end: open, member: true, comma: params[skipWS(params, open)] != '}'}, true
}

// lastName is the name of the member edits[k] inserts.
func lastName(edits []ParamEdit, k int) string { return edits[k].Path[len(edits[k].Path)-1] }

// trimComma removes trailing whitespace and one comma from dst[base:], if it ends so.
func trimComma(dst []byte, base int) []byte {
	i := len(dst)
	for i > base && (dst[i-1] == ' ' || dst[i-1] == '\t' || dst[i-1] == '\n' || dst[i-1] == '\r') {
		i--
	}
	if i > base && dst[i-1] == ',' {
		return dst[:i-1]
	}
	return dst
}

// memberExtent finds the member at path inside obj: its name's start, its value's end, and the start of the
// next member's name (-1 when it is its object's last).
func memberExtent(obj []byte, path []string) (start, end, next int, st Status) {
	os, _, st := LookupStatus(obj, path[:len(path)-1]...)
	if st != Found {
		return 0, 0, 0, st
	}
	if _, _, st := member(obj, os, path[len(path)-1]); st != Found {
		return 0, 0, 0, st // absent or ambiguous: nothing to delete, or no telling which
	}
	name := path[len(path)-1]
	for i := skipWS(obj, os+1); ; {
		ke, _, _ := scanString(obj, i)
		exact, _ := keyMatch(obj[i+1:ke-1], name)
		vs := skipWS(obj, skipWS(obj, ke)+1)
		ve, _ := scanValue(obj, vs, 0)
		after := skipWS(obj, ve)
		if exact {
			if obj[after] == '}' {
				return i, ve, -1, Found
			}
			return i, ve, skipWS(obj, after+1), Found
		}
		i = skipWS(obj, after+1) // member validated the object: a comma follows
	}
}

// moved returns the message raw, which is m's raw with the edits es applied (each changing the length by its
// delta): m's spans moved accordingly. Every edit lies inside params, or is the id's replacement, or is an
// insertion before the first member; none starts at a member's value.
func (m Message) moved(raw []byte, es []pendingEdit, deltas []int) Message {
	if len(es) > len(deltas) || len(es) > 0 && es[0].src == editInsertID || m.dup.ok() {
		if p, err := Parse(raw); err == nil {
			return p
		}
		return Message{}
	}
	move := func(s span) span {
		if !s.ok() {
			return s
		}
		start, end := int(s.start), int(s.end)
		for k, e := range es {
			if e.end <= int(s.start) {
				start += deltas[k]
			}
			if e.start < int(s.end) {
				end += deltas[k]
			}
		}
		return span{uint32(start), uint32(end)}
	}
	return Message{raw: raw, id: move(m.id), method: move(m.method), params: move(m.params), result: move(m.result), errv: move(m.errv), kind: m.kind}
}

// SetMember returns the JSON object obj with its member key set to the raw JSON value v (which the caller must
// ensure is valid): replaced where it exists, inserted first where it does not. The rest of the object is kept
// byte for byte. obj is returned unchanged when it is not an object, or when key is ambiguous there (see
// Lookup): rewriting one of two twins would leave the other for a downstream decoder to act on.
func SetMember(obj []byte, key string, v []byte) []byte {
	s, e, st := LookupStatus(obj, key)
	switch st {
	case Found:
		return Splice(make([]byte, 0, len(obj)-(e-s)+len(v)), obj, Edit{Start: s, End: e, With: v})
	case Absent:
	default:
		return obj
	}
	open := skipWS(obj, 0)
	rest := skipWS(obj, open+1)
	member := AppendQuote(make([]byte, 0, len(key)+len(v)+4), key)
	member = append(append(member, ':'), v...)
	if rest < len(obj) && obj[rest] != '}' {
		member = append(member, ',')
	}
	return Splice(make([]byte, 0, len(obj)+len(member)), obj, Edit{Start: open + 1, End: open + 1, With: member})
}

// DeleteMembers returns the JSON object obj without its members named keys (exact names). Kept members are copied
// byte for byte; the whitespace between members may change. obj is returned unchanged when nothing matches or it
// is not a valid object.
func DeleteMembers(obj []byte, keys ...string) []byte {
	return EditMembers(obj, keys, func(int, []byte) ([]byte, bool) { return nil, false })
}

// EditMembers returns the JSON object obj with its members named keys (exact names) passed through edit, which gets
// the index of the name in keys and the member's value, and returns the member's new value, which must be one JSON
// value, or false to drop the member. A value returned as it was given leaves the member as it is. Other members
// are copied byte for byte, and the whitespace between members may change where anything does. Every member of a
// name is edited, when it appears more than once.
//
// One scan of obj, and one copy, made at the first change: obj itself is returned when nothing changes, and when
// obj is not one valid object, with nothing but whitespace after it (edit may have been called by then).
func EditMembers(obj []byte, keys []string, edit func(key int, val []byte) ([]byte, bool)) []byte {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return obj
	}
	first := skipWS(obj, i+1)
	if first < len(obj) && obj[first] == '}' {
		return obj
	}
	var out []byte // nil until the first change
	wrote := false // out has a member after its '{'
	prevEnd := -1  // the end of the previous member's value
	for i = first; ; {
		if i >= len(obj) || obj[i] != '"' {
			return obj
		}
		ks := i
		ke, _, err := scanString(obj, i)
		if err != nil {
			return obj
		}
		k := -1
		for j, name := range keys {
			if exact, _ := keyMatch(obj[ks+1:ke-1], name); exact {
				k = j
				break
			}
		}
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return obj
		}
		vs := skipWS(obj, i+1)
		ve, err := scanValue(obj, vs, 0)
		if err != nil {
			return obj
		}
		val, keep, changed := obj[vs:ve], true, false
		if k >= 0 {
			nv, kp := edit(k, val)
			changed = !kp || len(nv) != len(val) || (len(nv) > 0 && &nv[0] != &val[0])
			val, keep = nv, kp
		}
		if changed && out == nil {
			// The first change: the members before this one go as they are, with their spacing.
			out = append(make([]byte, 0, len(obj)), '{')
			if prevEnd >= 0 {
				out = append(out, obj[first:prevEnd]...)
				wrote = true
			}
		}
		if out != nil && keep {
			if wrote {
				out = append(out, ',')
			}
			if changed {
				out = append(append(out, obj[ks:ke]...), ':')
				out = append(out, val...)
			} else {
				out = append(out, obj[ks:ve]...)
			}
			wrote = true
		}
		prevEnd = ve
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return obj
		}
		if obj[i] == '}' {
			break
		}
		if obj[i] != ',' {
			return obj
		}
		i = skipWS(obj, i+1)
	}
	if out == nil || skipWS(obj, i+1) != len(obj) {
		return obj
	}
	return append(out, '}')
}

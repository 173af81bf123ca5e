package jsonrpc

// Lookup finds the value of the member at path inside the JSON object obj,
// descending through nested objects (for example Lookup(params, "_meta",
// "progressToken")), and returns its span obj[start:end] without surrounding
// whitespace. With an empty path it returns the span of obj itself.
//
// Every object along the path is scanned completely and validated, so a
// returned span is always valid JSON, garbage input yields ok == false rather
// than a panic, and ambiguity is detected: if the key appears twice in an
// object, or a different key case-folds to it (encoding/json would match
// "Name" to a "name" field), Lookup reports not found, because a last-wins
// or case-insensitive decoder upstream could act on another member than the
// one the caller inspected or rewrote.
func Lookup(obj []byte, path ...string) (start, end int, ok bool) {
	start, end, st := LookupStatus(obj, path...)
	return start, end, st == Found
}

// Status is the outcome of LookupStatus.
type Status uint8

const (
	// Found: the path leads to exactly one value.
	Found Status = iota
	// Absent: some member along the path is missing.
	Absent
	// Ambiguous: some member along the path appears twice or has a case-variant twin. Callers that rewrite a
	// member before forwarding must refuse such input: a downstream decoder could act on the twin they left.
	Ambiguous
	// Malformed: obj is not a valid object along the path.
	Malformed
)

// LookupStatus is Lookup telling apart why nothing was found.
func LookupStatus(obj []byte, path ...string) (start, end int, st Status) {
	start = skipWS(obj, 0)
	if len(path) == 0 {
		e, err := scanValue(obj, start, 0)
		if err != nil {
			return 0, 0, Malformed
		}
		return start, e, Found
	}
	for _, name := range path {
		s, e, st := member(obj, start, name)
		if st != Found {
			return 0, 0, st
		}
		start, end = s, e
	}
	return start, end, Found
}

// member scans the object at obj[i] and returns the span of the unique value
// for key name.
func member(obj []byte, i int, name string) (start, end int, st Status) {
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, Malformed
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return 0, 0, Absent
	}
	found, ambiguous := false, false
	for {
		if i >= len(obj) || obj[i] != '"' {
			return 0, 0, Malformed
		}
		ke, _, err := scanString(obj, i)
		if err != nil {
			return 0, 0, Malformed
		}
		exact, fold := keyMatch(obj[i+1:ke-1], name)
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return 0, 0, Malformed
		}
		vs := skipWS(obj, i+1)
		ve, err := scanValue(obj, vs, 0)
		if err != nil {
			return 0, 0, Malformed
		}
		if exact {
			ambiguous = ambiguous || found
			found, start, end = true, vs, ve
		} else if fold {
			ambiguous = true
		}
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return 0, 0, Malformed
		}
		if obj[i] == '}' {
			break
		}
		if obj[i] != ',' {
			return 0, 0, Malformed
		}
		i = skipWS(obj, i+1)
	}
	switch {
	case ambiguous:
		return 0, 0, Ambiguous
	case !found:
		return 0, 0, Absent
	}
	return start, end, Found
}

// LookupString returns the unquoted string at path inside obj; ok is false when the member is absent,
// ambiguous or not a string.
func LookupString(obj []byte, path ...string) (string, bool) {
	s, e, ok := Lookup(obj, path...)
	if !ok {
		return "", false
	}
	v, err := Unquote(obj[s:e])
	return v, err == nil
}

// Span is where a member's value lies in an object (obj[Start:End]); Found is false when the member is absent.
type Span struct {
	Start, End int
	Found      bool
}

// LookupMembers scans the object obj once and returns the span of each named member's value, in the order of
// names: one pass where several Lookup calls would scan the object once each. ok is false when obj is not a
// valid object, or when a name is ambiguous there (see Lookup).
func LookupMembers(obj []byte, names ...string) (spans []Span, ok bool) {
	spans = make([]Span, len(names))
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return spans, true
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return nil, false
		}
		ke, _, err := scanString(obj, i)
		if err != nil {
			return nil, false
		}
		key := obj[i+1 : ke-1]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		vs := skipWS(obj, i+1)
		ve, err := scanValue(obj, vs, 0)
		if err != nil {
			return nil, false
		}
		for n, name := range names {
			exact, fold := keyMatch(key, name)
			if exact && spans[n].Found || fold && !exact {
				return nil, false // a twin: a last-wins or case-folding decoder could read the other one
			}
			if exact {
				spans[n] = Span{Start: vs, End: ve, Found: true}
			}
		}
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return nil, false
		}
		if obj[i] == '}' {
			return spans, true
		}
		if obj[i] != ',' {
			return nil, false
		}
		i = skipWS(obj, i+1)
	}
}

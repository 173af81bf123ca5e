package pin

import (
	"bytes"
	"encoding/json"
)

// DuplicateMember reports a member name that appears twice in one object of a JSON value, at any depth, compared
// after unescaping (`"\u0064escription"` is "description"). A definition with one is ambiguous: the gateway's
// reading of it (the pin hash, the invisible characters, what is stripped) need not be the reading of the client
// it is served to, whose parser may keep the other member. found is false for a value without one, and for one
// that is not JSON (whoever parses it reports that).
//
// Strings that are not valid UTF-8 are compared as encoding/json decodes them, with U+FFFD for each bad byte, so two
// names that differ only in their bad bytes count as the same: refused rather than read two ways.
//
// The gateway's own check of client requests will live in upstream/jsonrpc; this one serves definitions until then
// and may be swapped for it.
func DuplicateMember(def []byte) (name string, found bool) {
	d := json.NewDecoder(bytes.NewReader(def))
	d.UseNumber()
	// An open object has a set of its member names so far; an open array has none. wantKey: the object's next
	// token is a member name (or its end).
	type open struct {
		names   map[string]struct{}
		wantKey bool
	}
	var stack []open
	for {
		tok, err := d.Token()
		if err != nil {
			return "", false
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if s, ok := tok.(string); ok {
				if _, dup := stack[n-1].names[s]; dup {
					return s, true
				}
				stack[n-1].names[s] = struct{}{}
				stack[n-1].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{names: map[string]struct{}{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, open{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended (a scalar or a closed object or array): the object around it expects a name next.
		if len(stack) == 0 {
			return "", false
		}
		if top := &stack[len(stack)-1]; top.names != nil {
			top.wantKey = true
		}
	}
}

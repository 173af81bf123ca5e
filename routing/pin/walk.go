package pin

import (
	"bytes"
	"encoding/json"
	"sort"
)

// InvisibleIn lists the invisible or bidirectional-control characters anywhere in a definition's strings (member
// names too: a property named "path\u200b" is as much a trick as a description), decoded from their JSON
// escapes; nil when there are none or def is not JSON.
func InvisibleIn(def []byte) []string {
	var v any
	if json.Unmarshal(def, &v) != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	note := func(s string) {
		for _, c := range Invisible(s) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			note(v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				note(k)
				walk(e)
			}
		}
	}
	walk(v)
	sort.Strings(out) // map order must not reorder the report
	return out
}

// StripText returns a definition with the invisible and bidirectional-control characters removed from every
// "title" and "description" string, at any depth (the tool's own and its schemas' properties'). Names, enum
// values and defaults are left alone: they are what the upstream expects back, and changing them would break
// calls; InvisibleIn still reports them. def is returned as is when nothing changes or it is not JSON.
func StripText(def []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(def))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return def
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && (k == "title" || k == "description") {
					if t := Strip(s); t != s {
						v[k], changed = t, true
					}
					continue
				}
				v[k] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return def
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return def
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

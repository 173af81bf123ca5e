package codemode

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// Describe renders TypeScript declarations of tools, for describe_tools: one `declare const tools` whose
// members are the tools, typed from their inputSchema and outputSchema, with descriptions as doc comments.
// A tool without an outputSchema resolves to its content array. The text is compact (a one-line doc comment
// stays on one line, a small object type on its own line): every byte of it is read by the model.
func Describe(tools []Tool) string { return declare(tools, false) }

// Brief renders the declarations as Describe does, each description cut to its first sentence: what
// search_tools gives in code mode, enough to write a script; Describe gives the rest.
func Brief(tools []Tool) string { return declare(tools, true) }

func declare(tools []Tool, brief bool) string {
	var b strings.Builder
	for _, t := range tools {
		if len(t.OutputSchema) == 0 {
			b.WriteString("type Content = {type: \"text\"; text: string} | {type: string; [key: string]: unknown};\n")
			break
		}
	}
	b.WriteString("declare const tools: {\n")
	for _, t := range tools {
		w := schemaWriter{brief: brief}
		in := w.parse(t.InputSchema)
		w.doc(&b, "  ", t.Description, "")
		b.WriteString("  " + propName(t.Name) + "(args")
		if len(w.required(in)) == 0 {
			b.WriteString("?")
		}
		b.WriteString(": " + w.typeOf(in, in, 1) + "): Promise<")
		if len(t.OutputSchema) > 0 {
			out := w.parse(t.OutputSchema)
			b.WriteString(w.typeOf(out, out, 1))
		} else {
			b.WriteString("Content[]")
		}
		b.WriteString(">;\n")
	}
	b.WriteString("};\n")
	return b.String()
}

// maxDepth bounds nesting and $ref chains; past it a type is unknown.
const maxDepth = 8

// schemaWriter turns JSON Schema into TypeScript types.
type schemaWriter struct {
	refs  []string // $refs being expanded: a cycle is unknown
	brief bool     // descriptions cut to their first sentence
}

func (w *schemaWriter) parse(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

func (w *schemaWriter) required(s map[string]any) map[string]bool {
	req := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				req[name] = true
			}
		}
	}
	return req
}

// resolve follows a local $ref ("#/$defs/X", "#/definitions/X", any JSON pointer into the root).
func (w *schemaWriter) resolve(root map[string]any, ref string) (map[string]any, bool) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var cur any = root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// typeOf is the TypeScript type of schema s; indent is the nesting level of its members.
func (w *schemaWriter) typeOf(s, root map[string]any, indent int) string {
	if s == nil || indent > maxDepth {
		return "unknown"
	}
	if ref, ok := s["$ref"].(string); ok {
		for _, r := range w.refs {
			if r == ref {
				return "unknown"
			}
		}
		target, ok := w.resolve(root, ref)
		if !ok {
			return "unknown"
		}
		w.refs = append(w.refs, ref)
		defer func() { w.refs = w.refs[:len(w.refs)-1] }()
		return w.typeOf(target, root, indent)
	}
	if c, ok := s["const"]; ok {
		return literal(c)
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		parts := make([]string, len(e))
		for i, v := range e {
			parts[i] = literal(v)
		}
		return strings.Join(parts, " | ")
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[kw].([]any); ok && len(alts) > 0 {
			return w.union(alts, root, indent, " | ")
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		return w.union(all, root, indent, " & ")
	}
	switch t := s["type"].(type) {
	case string:
		return w.typeNamed(t, s, root, indent)
	case []any:
		var parts []string
		for _, v := range t {
			if name, ok := v.(string); ok {
				parts = append(parts, w.typeNamed(name, s, root, indent))
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " | ")
		}
	}
	if _, ok := s["properties"]; ok {
		return w.object(s, root, indent)
	}
	return "unknown"
}

func (w *schemaWriter) union(alts []any, root map[string]any, indent int, sep string) string {
	parts := make([]string, 0, len(alts))
	for _, a := range alts {
		m, _ := a.(map[string]any)
		t := w.typeOf(m, root, indent)
		if strings.ContainsAny(t, "|&") && !strings.HasPrefix(t, "{") {
			t = "(" + t + ")"
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, sep)
}

func (w *schemaWriter) typeNamed(name string, s, root map[string]any, indent int) string {
	switch name {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		items, _ := s["items"].(map[string]any)
		t := w.typeOf(items, root, indent)
		if strings.ContainsAny(t, "|& ") && !strings.HasPrefix(t, "{") {
			return "Array<" + t + ">"
		}
		return t + "[]"
	case "object":
		return w.object(s, root, indent)
	}
	return "unknown"
}

// object renders properties (sorted, required ones without "?") and additionalProperties as an index
// signature: on one line when that is short and no member has a doc comment, else a member a line.
func (w *schemaWriter) object(s, root map[string]any, indent int) string {
	props, _ := s["properties"].(map[string]any)
	req := w.required(s)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	pad := strings.Repeat("  ", indent+1)
	var members []string
	documented := false
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		desc, _ := p["description"].(string)
		def := ""
		if d, ok := p["default"]; ok {
			def = "@default " + literal(d)
		}
		var m strings.Builder
		w.doc(&m, pad, desc, def)
		documented = documented || m.Len() > 0
		opt := "?"
		if req[n] {
			opt = ""
		}
		m.WriteString(propName(n) + opt + ": " + w.typeOf(p, root, indent+1) + ";")
		members = append(members, m.String())
	}
	switch ap := s["additionalProperties"].(type) {
	case bool:
		if ap {
			members = append(members, "[key: string]: unknown;")
		}
	case map[string]any:
		members = append(members, "[key: string]: "+w.typeOf(ap, root, indent+1)+";")
	}
	if len(members) == 0 {
		if _, closed := s["additionalProperties"]; !closed {
			return "{[key: string]: unknown}"
		}
		return "{}"
	}
	if line := "{" + strings.TrimSuffix(strings.Join(members, " "), ";") + "}"; !documented && len(line) <= 80 && !strings.Contains(line, "\n") {
		return line
	}
	var b strings.Builder
	b.WriteString("{\n")
	for _, m := range members {
		if !strings.HasPrefix(m, pad) {
			b.WriteString(pad)
		}
		b.WriteString(m + "\n")
	}
	b.WriteString(strings.Repeat("  ", indent) + "}")
	return b.String()
}

// literal is a JSON value as a TypeScript literal type.
func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// propName is a member name: bare when it is an identifier, else quoted.
func propName(n string) string {
	if identifier.MatchString(n) {
		return n
	}
	return literal(n)
}

// doc writes a doc comment of desc and an extra tag, on one line when it fits one; "*/" in them cannot end
// it early. A member's comment ends with a space, its member following on the same line.
func (w *schemaWriter) doc(b *strings.Builder, pad, desc, extra string) {
	desc = strings.TrimSpace(desc)
	if w.brief {
		desc = firstSentence(desc)
	}
	if desc == "" && extra == "" {
		return
	}
	var lines []string
	for _, l := range strings.Split(desc, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, strings.ReplaceAll(l, "*/", "*\\/"))
		}
	}
	if extra != "" {
		lines = append(lines, extra)
	}
	member := pad != "  "
	if len(lines) == 1 {
		b.WriteString(pad + "/** " + lines[0] + " */")
		if member {
			b.WriteString(" ")
		} else {
			b.WriteString("\n")
		}
		return
	}
	b.WriteString(pad + "/**\n")
	for _, l := range lines {
		b.WriteString(pad + " * " + l + "\n")
	}
	b.WriteString(pad + " */\n")
	if member {
		b.WriteString(pad)
	}
}

// firstSentence is a description's first paragraph, cut after its first sentence when it is long, and to
// 200 characters at most.
func firstSentence(desc string) string {
	desc, _, _ = strings.Cut(desc, "\n\n")
	desc = strings.Join(strings.Fields(desc), " ")
	if len(desc) > 120 {
		if i := strings.Index(desc, ". "); i > 0 {
			desc = desc[:i+1]
		}
	}
	if r := []rune(desc); len(r) > 200 {
		desc = string(r[:199]) + "…"
	}
	return desc
}

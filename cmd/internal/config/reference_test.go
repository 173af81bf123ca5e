package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"
)

// The key reference of docs/configuration.md and the JSON Schema
// docs/config.schema.json are generated from the field tables: these tests
// fail when either differs from what the tables say, and
// SWITCHBOARD_UPDATE_DOCS=1 rewrites them.
const (
	referenceDoc   = "../../../docs/configuration.md"
	schemaFile     = "../../../docs/config.schema.json"
	referenceBegin = "<!-- key reference: generated from cmd/internal/config's field tables (TestKeyReference); edit the tables and run SWITCHBOARD_UPDATE_DOCS=1 go test ./cmd/internal/config -->\n"
	referenceEnd   = "<!-- end of the key reference -->\n"
)

// updateDocs reports whether the generated files are to be rewritten.
func updateDocs() bool { return os.Getenv("SWITCHBOARD_UPDATE_DOCS") == "1" }

// TestKeyReference: the key reference in docs/configuration.md is the one the
// tables derive.
func TestKeyReference(t *testing.T) {
	doc, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(doc, []byte(referenceBegin)), bytes.Index(doc, []byte(referenceEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s has no key reference between %q and %q", referenceDoc, referenceBegin, referenceEnd)
	}
	got := string(doc[begin+len(referenceBegin) : end])
	want := keyReference()
	if got == want {
		return
	}
	if updateDocs() {
		out := slicesConcat(doc[:begin+len(referenceBegin)], []byte(want), doc[end:])
		if err := os.WriteFile(referenceDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the key reference in %s differs from the field tables; run SWITCHBOARD_UPDATE_DOCS=1 go test ./cmd/internal/config -run TestKeyReference\n%s",
		referenceDoc, firstDiff(got, want))
}

// TestConfigSchema: docs/config.schema.json is the schema the tables derive.
func TestConfigSchema(t *testing.T) {
	want := configSchema()
	got, err := os.ReadFile(schemaFile)
	if err == nil && string(got) == string(want) {
		return
	}
	if updateDocs() {
		if err := os.WriteFile(schemaFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s differs from the field tables (%v); run SWITCHBOARD_UPDATE_DOCS=1 go test ./cmd/internal/config -run TestConfigSchema\n%s",
		schemaFile, err, firstDiff(string(got), string(want)))
}

func slicesConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// firstDiff shows the first line where got and want part.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  have %q\n  want %q", i+1, gl, wl)
		}
	}
	return ""
}

// keyReference writes the reference: the top level's keys, then each block's,
// in the order the tables first reach them. A table reached again (an
// endpoint's policy is the top level's) is referred to, not repeated.
func keyReference() string {
	var b strings.Builder
	b.WriteString("\nEvery key the file takes, block by block, as the gateway reads it. A *secret* is never shown: `switchboard\n" +
		"check` and the logs print `<redacted>` in its place. A key left out takes its default; one without a default is\n" +
		"off, or, where it says so, required. Durations take a unit (`500ms`, `30s`, `10m`, `1h30m`); sizes are bytes or take\n" +
		"one (`4MiB`, `1GB`).\n")
	type block struct {
		title  string
		fields []field
	}
	seen := map[uintptr]string{}
	queue := []block{{"Top level", topFields()}}
	for len(queue) > 0 {
		bl := queue[0]
		queue = queue[1:]
		fmt.Fprintf(&b, "\n### %s\n\n| Key | Type | Default | What it does |\n|---|---|---|---|\n", bl.title)
		prefix := strings.Trim(strings.TrimPrefix(bl.title, "Top level"), "`")
		for _, f := range bl.fields {
			path := joinPath(prefix, f)
			typ := typeName(f)
			if f.sub != nil {
				id := reflect.ValueOf(f.sub).Pointer()
				if first, ok := seen[id]; ok {
					typ += ", as `" + first + "`"
				} else {
					seen[id] = path
					typ += ", below"
					queue = append(queue, block{"`" + path + "`", f.sub()})
				}
			}
			if f.secret {
				typ += ", *secret*"
			}
			def := ""
			if d, ok := strings.CutPrefix(f.def, "("); ok {
				def = cell(strings.TrimSuffix(d, ")"))
			} else if f.def != "" {
				def = "`" + f.def + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.key, typ, def, cell(f.doc))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// joinPath names a key under a block: "auth.browser", "upstreams[]",
// "overrides.<key>".
func joinPath(prefix string, f field) string {
	p := f.key
	if prefix != "" {
		p = prefix + "." + f.key
	}
	switch f.typ {
	case tBlockList:
		p += "[]"
	case tBlockMap:
		p += ".<key>"
	}
	return p
}

func typeName(f field) string {
	names := map[valueType]string{tString: "string", tInt: "integer", tNumber: "number", tBool: "boolean", tDuration: "duration",
		tSize: "size", tStrings: "list of strings", tScalars: "list of strings", tStringMap: "map of strings", tObject: "object",
		tClaims: "map of values or lists", tBlock: "block", tBlockList: "list of blocks", tBlockMap: "map of blocks",
		tBoolOrBlock: "true, or a block"}
	s := names[f.typ]
	if len(f.enum) > 0 {
		s += ": `" + strings.Join(f.enum, "`, `") + "`"
	}
	return s
}

// cell escapes a table cell's text: Markdown would take <name> for HTML and
// RS* for emphasis.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`).Replace(s)
}

// ordered is a JSON object that keeps its keys' order.
type ordered []struct {
	k string
	v any
}

func (o *ordered) add(k string, v any) *ordered {
	*o = append(*o, struct {
		k string
		v any
	}{k, v})
	return o
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.k)
		v, err := json.Marshal(kv.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// configSchema is the JSON Schema (draft-07, which Helm and the YAML
// language server read) of the file in its main form.
func configSchema() []byte {
	s := &ordered{}
	s.add("$schema", "http://json-schema.org/draft-07/schema#")
	s.add("title", "Switchboard configuration")
	s.add("description", "The gateway's configuration file (docs/configuration.md). Generated from cmd/internal/config's field tables.")
	blockSchema(s, topFields())
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(out, '\n')
}

// The patterns of durations and sizes, as time.ParseDuration and the size
// reader take them.
const (
	durationPattern = `^\s*([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+\s*$`
	sizePattern     = `^\s*[0-9]+\s*([KkMmGg][Ii]?[Bb]|[Bb])?\s*$`
)

func blockSchema(s *ordered, fs []field) {
	props := &ordered{}
	for _, f := range fs {
		props.add(f.key, fieldSchema(f))
	}
	s.add("type", "object").add("additionalProperties", false).add("properties", props)
}

func fieldSchema(f field) *ordered {
	s := &ordered{}
	desc := f.doc
	if f.def != "" {
		desc += " Default: " + strings.Trim(f.def, "()") + "."
	}
	if f.secret {
		desc += " A secret: never shown."
	}
	s.add("description", desc)
	str := func() any {
		if len(f.enum) > 0 {
			return (&ordered{}).add("enum", f.enum)
		}
		return (&ordered{}).add("type", "string")
	}
	sub := func() *ordered {
		b := &ordered{}
		blockSchema(b, f.sub())
		return b
	}
	switch f.typ {
	case tString:
		if len(f.enum) > 0 {
			s.add("enum", f.enum)
		} else {
			s.add("type", "string")
		}
	case tInt:
		s.add("type", "integer")
		if f.max > 0 {
			s.add("minimum", f.min).add("maximum", f.max)
		}
	case tNumber:
		s.add("type", "number")
	case tBool:
		s.add("type", "boolean")
	case tDuration:
		s.add("type", "string").add("pattern", durationPattern)
	case tSize:
		s.add("type", []string{"integer", "string"}).add("pattern", sizePattern)
	case tStrings:
		s.add("type", "array").add("items", str())
	case tScalars:
		s.add("type", "array").add("items", (&ordered{}).add("type", []string{"string", "number", "boolean"}))
	case tStringMap:
		s.add("type", "object").add("additionalProperties", (&ordered{}).add("type", "string"))
	case tObject:
		s.add("type", "object")
	case tClaims:
		scalar := []string{"string", "number", "boolean"}
		s.add("type", "object").add("additionalProperties", (&ordered{}).add("anyOf", []any{
			(&ordered{}).add("type", scalar),
			(&ordered{}).add("type", "array").add("items", (&ordered{}).add("type", scalar)),
		}))
	case tBlock:
		blockSchema(s, f.sub())
	case tBlockList:
		s.add("type", "array").add("items", sub())
	case tBlockMap:
		s.add("type", "object").add("additionalProperties", sub())
	case tBoolOrBlock:
		s.add("anyOf", []any{(&ordered{}).add("type", "boolean"), sub()})
	}
	return s
}

// TestConfigSchemaAccepts: the schema accepts the files the repository ships
// and the examples of docs/configuration.md, all of which the gateway reads,
// and refuses a misspelt key, as the gateway does.
func TestConfigSchemaAccepts(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal(configSchema(), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range []string{"../../../deploy/examples/demo.yaml", "../../../deploy/compose/switchboard.yaml", "../../../deploy/kustomize/base/config.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	doc, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	// Every yaml block of the guide that the gateway reads whole.
	for i, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if _, err := Parse("block.yaml", []byte(block), func(string) (string, bool) { return strings.Repeat("x", 40), true }); err == nil {
			files[fmt.Sprintf("%s, yaml block %d", referenceDoc, i+1)] = []byte(block)
		}
	}
	if len(files) < 10 {
		t.Fatalf("only %d files to check", len(files))
	}
	for name, data := range files {
		if err := rs.Validate(yamlAsJSON(t, data)); err != nil {
			t.Errorf("%s: the schema refuses a file the gateway reads: %v", name, err)
		}
	}
	if err := rs.Validate(yamlAsJSON(t, []byte("upstreams:\n  - name: a\n    url: https://a.example.com/mcp\n    timout: 1m\n"))); err == nil {
		t.Error("the schema accepts the unknown key upstreams[0].timout")
	}
}

// yamlAsJSON reads YAML as JSON would hold it.
func yamlAsJSON(t *testing.T, data []byte) any {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// chartSchema is the Helm chart's values schema, whose config value holds
// top-level keys of the file.
const chartSchema = "../../../charts/switchboard/values.schema.json"

// TestChartConfigSchema: the keys the chart's config value takes are
// described as the field tables describe them (the chart lists which keys
// it takes; SWITCHBOARD_UPDATE_DOCS=1 rewrites their schemas).
func TestChartConfigSchema(t *testing.T) {
	data, err := os.ReadFile(chartSchema)
	if err != nil {
		t.Fatal(err)
	}
	const open, indent = "\n    \"config\": {\n", "    "
	begin := bytes.Index(data, []byte(open))
	end := bytes.Index(data[begin+1:], []byte("\n"+indent+"}"))
	if begin < 0 || end < 0 {
		t.Fatalf("%s has no top-level config property", chartSchema)
	}
	end += begin + 1
	var chart struct {
		Type                 string                     `json:"type"`
		AdditionalProperties bool                       `json:"additionalProperties"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Description          string                     `json:"description"`
	}
	if err := json.Unmarshal(data[begin+len(open)-2:end+len(indent)+2], &chart); err != nil {
		t.Fatalf("%s: config: %v", chartSchema, err)
	}
	top := map[string]field{}
	for _, f := range topFields() {
		top[f.key] = f
	}
	props := &ordered{}
	for _, f := range topFields() { // the table's order
		if _, ok := chart.Properties[f.key]; ok {
			props.add(f.key, fieldSchema(f))
		}
	}
	for k := range chart.Properties {
		if _, ok := top[k]; !ok || k == "listen" {
			t.Errorf("%s: config.%s is not a key of the file the chart may set", chartSchema, k)
		}
	}
	want := &ordered{}
	want.add("type", "object").add("additionalProperties", false).add("properties", props).add("description", chart.Description)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, "  ")
	if err := enc.Encode(want); err != nil {
		t.Fatal(err)
	}
	wantText := strings.TrimSuffix(b.String(), "\n")
	gotText := string(data[begin+len(open)-2 : end+len(indent)+2])
	if gotText == wantText {
		return
	}
	if updateDocs() {
		out := slicesConcat(data[:begin+len(open)-2], []byte(wantText), data[end+len(indent)+2:])
		if err := os.WriteFile(chartSchema, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the config value's keys differ from the field tables; run SWITCHBOARD_UPDATE_DOCS=1 go test ./cmd/internal/config -run TestChartConfigSchema\n%s",
		chartSchema, firstDiff(gotText, wantText))
}

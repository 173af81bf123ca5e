package evalset_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
)

// TestCatalog checks the size and the shape of the catalog (issue 34): at least 80 servers and 1,000 tools, of
// which at least 42 servers are not in the older set of tools.json (that set may give at most 38 of the 80), every
// server with a purpose and a source, every tool with a name and an input schema that is a JSON object, and the
// exposed names <upstream>__<tool> unique.
func TestCatalog(t *testing.T) {
	cat := evalset.Catalog()
	old := map[string]bool{}
	for _, s := range evalset.Servers() {
		old[s.Upstream] = true
	}
	upstreams := map[string]bool{}
	exposed := map[string]bool{}
	tools, fresh := 0, 0
	for _, s := range cat {
		if s.Upstream == "" || s.Upstream != strings.ToLower(s.Upstream) || strings.Contains(s.Upstream, "__") {
			t.Errorf("upstream %q: want a short lowercase name without __", s.Upstream)
		}
		if upstreams[s.Upstream] {
			t.Errorf("upstream %q twice", s.Upstream)
		}
		upstreams[s.Upstream] = true
		if !old[s.Upstream] {
			fresh++
		}
		if strings.TrimSpace(s.Purpose) == "" || strings.Contains(s.Purpose, "\n") || strings.Contains(s.Purpose, "\t") {
			t.Errorf("%s: purpose %q: want one line", s.Upstream, s.Purpose)
		}
		if s.Source == "" {
			t.Errorf("%s: no source", s.Upstream)
		}
		if len(s.Tools) == 0 {
			t.Errorf("%s: no tools", s.Upstream)
		}
		for _, tool := range s.Tools {
			tools++
			if tool.Name == "" {
				t.Errorf("%s: a tool without a name", s.Upstream)
				continue
			}
			name := s.Upstream + "__" + tool.Name
			if exposed[name] {
				t.Errorf("%s: exposed twice", name)
			}
			exposed[name] = true
			var schema map[string]any
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema == nil {
				t.Errorf("%s: inputSchema %.80s: want a JSON object", name, tool.InputSchema)
			}
		}
	}
	t.Logf("catalog: %d servers (%d not in tools.json), %d tools", len(cat), fresh, tools)
	if len(cat) < 80 || tools < 1000 || fresh < 42 {
		t.Errorf("catalog: %d servers, %d not in tools.json, %d tools: want at least 80, 42 and 1000", len(cat), fresh, tools)
	}
	if docs := evalset.CatalogDocs(); len(docs) != tools {
		t.Errorf("CatalogDocs: %d docs, want %d", len(docs), tools)
	}
}

// TestSchemaParams checks that parameters come in the schema's order, with their descriptions.
func TestSchemaParams(t *testing.T) {
	ps := evalset.SchemaParams(json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string","description":"last letter"},"alpha":true,"mid":{"type":"number"}}}`))
	got := []string{}
	for _, p := range ps {
		got = append(got, p.Name+"="+p.Description)
	}
	if want := "zeta=last letter,alpha=,mid="; strings.Join(got, ",") != want {
		t.Errorf("SchemaParams: %s, want %s", strings.Join(got, ","), want)
	}
	if ps := evalset.SchemaParams(json.RawMessage(`{"type":"object"}`)); ps != nil {
		t.Errorf("SchemaParams of a schema without properties: %v", ps)
	}
}

package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const searchYAML = `upstreams:
  - {name: github, url: https://gh.example/mcp}
  - {name: files, command: fs}
discovery: search
alwaysList: ["files__read_*"]
exposeFound: true
endpoints:
  - name: research
    include: ["files__*"]
  - name: ops
    include: ["github__*"]
    discovery: search
    alwaysList: ["github__get_*", "github__list_issues"]
  - name: triage
    include: ["github__*"]
    discovery: list
    exposeFound: false
  - name: agents
    discovery: search
    exposeFound: true
search:
  embeddings:
    url: https://api.openai.com/v1
    model: text-embedding-3-small
    apiKeyEnv: OPENAI_API_KEY
  timeout: 500ms
`

// TestParseSearch: discovery, alwaysList and exposeFound at both levels, their defaults, and the search: block.
func TestParseSearch(t *testing.T) {
	const key = "sk-proj-TOPSECRET"
	cfg, err := Parse("c.yaml", []byte(searchYAML), envOf(map[string]string{"OPENAI_API_KEY": key}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", warningLines(cfg.Warnings))
	}
	if cfg.Discovery != DiscoverySearch || !reflect.DeepEqual(cfg.AlwaysList, []string{"files__read_*"}) || !cfg.ExposeFound {
		t.Errorf("top level: discovery %q, alwaysList %q, exposeFound %v", cfg.Discovery, cfg.AlwaysList, cfg.ExposeFound)
	}
	want := []Endpoint{
		{Name: "research", Include: []string{"files__*"}, Discovery: DiscoveryList},
		{Name: "ops", Include: []string{"github__*"}, Discovery: DiscoverySearch, AlwaysList: []string{"github__get_*", "github__list_issues"}},
		{Name: "triage", Include: []string{"github__*"}, Discovery: DiscoveryList},
		{Name: "agents", Discovery: DiscoverySearch, ExposeFound: true},
	}
	if !reflect.DeepEqual(cfg.Endpoints, want) {
		t.Errorf("Endpoints = %+v\nwant %+v", cfg.Endpoints, want)
	}
	wantSearch := Search{
		Embeddings: &Embeddings{URL: "https://api.openai.com/v1", Model: "text-embedding-3-small", APIKeyEnv: "OPENAI_API_KEY", APIKey: key},
		Timeout:    500 * time.Millisecond,
	}
	if !reflect.DeepEqual(cfg.Search, wantSearch) {
		t.Errorf("Search = %+v %+v\nwant %+v %+v", cfg.Search, cfg.Search.Embeddings, wantSearch, wantSearch.Embeddings)
	}

	out := cfg.String()
	for _, want := range []string{
		"  - name: ops  # /mcp/ops\n    include: [\"github__*\"]\n    discovery: search  # tools/list: search_tools, call_tool and alwaysList\n    alwaysList: [\"github__get_*\", \"github__list_issues\"]\n",
		"  - name: agents  # /mcp/agents\n    include: []  # everything\n    discovery: search  # tools/list: search_tools, call_tool and alwaysList\n    exposeFound: true\n",
		"  - name: triage  # /mcp/triage\n    include: [\"github__*\"]\n  - name: agents",
		"discovery: search  # /mcp; tools/list: search_tools, call_tool and alwaysList\nalwaysList: [\"files__read_*\"]\nexposeFound: true\n",
		"search:\n  embeddings: {url: \"https://api.openai.com/v1\", model: \"text-embedding-3-small\", apiKeyEnv: OPENAI_API_KEY}  # hybrid: BM25 and embeddings\n  timeout: 500ms\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("String lacks\n%s\nin:\n%s", want, out)
		}
	}
	if strings.Contains(out, key) || strings.Contains(out, "TOPSECRET") {
		t.Errorf("String shows the API key:\n%s", out)
	}
	if got, want := cfg.Summary(), "2 upstreams, /mcp in search mode, 4 endpoints (/mcp/research, /mcp/ops, /mcp/triage, /mcp/agents; search: /mcp/ops, /mcp/agents), hybrid search (model text-embedding-3-small)"; got != want {
		t.Errorf("Summary = %q\nwant %q", got, want)
	}

	r := cfg.Redacted()
	if r.Search.Embeddings.APIKey != redactedValue || r.Search.Embeddings.APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("Redacted embeddings = %+v", r.Search.Embeddings)
	}
	r.Endpoints[1].AlwaysList[0] = "changed"
	r.AlwaysList[0] = "changed"
	if cfg.Search.Embeddings.APIKey != key || cfg.Endpoints[1].AlwaysList[0] != "github__get_*" || cfg.AlwaysList[0] != "files__read_*" {
		t.Error("Redacted shares or changes the original")
	}
}

// TestSearchDefaults: without the keys, /mcp and every endpoint list, search is BM25 only with a 2s timeout, and
// String and Summary say nothing of search.
func TestSearchDefaults(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("upstreams: [{name: a, command: x}]\nendpoints: [{name: e}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Discovery != DiscoveryList || cfg.AlwaysList != nil || cfg.ExposeFound ||
		cfg.Search != (Search{Timeout: DefaultSearchTimeout}) || cfg.Endpoints[0].Discovery != DiscoveryList {
		t.Errorf("defaults: %q %q %v %+v %+v", cfg.Discovery, cfg.AlwaysList, cfg.ExposeFound, cfg.Search, cfg.Endpoints[0])
	}
	if out := cfg.String(); strings.Contains(out, "discovery") || strings.Contains(out, "search") {
		t.Errorf("String shows discovery or search for the defaults:\n%s", out)
	}
	if got := cfg.Summary(); got != "1 upstream, 1 endpoint (/mcp/e)" {
		t.Errorf("Summary = %q", got)
	}
	if d := Default(); d.Discovery != DiscoveryList || d.Search.Timeout != 2*time.Second {
		t.Errorf("Default() = %q %+v", d.Discovery, d.Search)
	}

	// Search mode without embeddings: BM25 only, shown with its timeout; no key needed.
	cfg, err = Parse("c.yaml", []byte("upstreams: [{name: a, command: x}]\nendpoints: [{name: e, discovery: search}]\nsearch: {timeout: 30s}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := cfg.String(); !strings.Contains(out, "search: {timeout: 30s}  # BM25 only: no embeddings\n") {
		t.Errorf("String:\n%s", out)
	}
	if got := cfg.Summary(); got != "1 upstream, 1 endpoint (/mcp/e; search: /mcp/e)" {
		t.Errorf("Summary = %q", got)
	}

	// Embeddings without a key, over https, in JSON.
	cfg, err = Parse("c.json", []byte(`{"upstreams": [{"name": "a", "command": "x"}], "discovery": "search",
  "search": {"embeddings": {"url": "http://127.0.0.1:11434/v1/embeddings", "model": "nomic-embed-text"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.Search.Embeddings; e == nil || e.APIKeyEnv != "" || e.APIKey != "" || cfg.Search.Timeout != DefaultSearchTimeout || len(cfg.Warnings) != 0 {
		t.Errorf("Search = %+v %+v, warnings %v", cfg.Search, cfg.Search.Embeddings, cfg.Warnings)
	}
	if out := cfg.String(); !strings.Contains(out, "  embeddings: {url: \"http://127.0.0.1:11434/v1/embeddings\", model: \"nomic-embed-text\"}") {
		t.Errorf("String:\n%s", out)
	}
}

// TestSearchInvalid checks each error of discovery, alwaysList, exposeFound and search with its position.
func TestSearchInvalid(t *testing.T) {
	const ups = "upstreams:\n  - {name: github, url: https://gh.example/mcp}\n  - {name: files, command: fs}\n"
	// ups is lines 1-3; each case's own lines start at 4.
	tests := []struct {
		name string
		in   string
		env  map[string]string
		want []string
	}{
		{
			name: "discovery values",
			in:   "discovery: lst\nendpoints:\n  - name: a\n    discovery: [search]\n  - name: b\n    discovery: progressive\n",
			want: []string{
				`c.yaml:4:12: discovery: "lst" is not a discovery mode; did you mean "list"? (list, search or code)`,
				`c.yaml:7:16: endpoints[0].discovery: must be a string, not a list`,
				`c.yaml:9:16: endpoints[1].discovery: "progressive" is not a discovery mode; use list (tools/list shows every tool), search (tools/list shows the meta-tools search_tools and call_tool, and the tools alwaysList matches) or code (search, plus describe_tools and run_script)`,
			},
		},
		{
			name: "alwaysList and exposeFound values",
			in:   "discovery: search\nalwaysList: [\"\", \"files__[a-\"]\nexposeFound: 1\nendpoints:\n  - name: a\n    discovery: search\n    alwaysList: {x: 1}\n    exposFound: true\n",
			want: []string{
				`c.yaml:5:14: alwaysList[0]: glob is empty; write a name, or a pattern with * and ?, such as "files__*"`,
				`c.yaml:5:18: alwaysList[1]: "files__[a-" is not a valid glob (an unclosed '[', a '\' at the end, or an empty or reversed range); the syntax is Go's path.Match: * ? [a-z] [^a-z] and \ to escape`,
				`c.yaml:6:14: exposeFound: must be true or false, not a number`,
				`c.yaml:10:17: endpoints[0].alwaysList: must be a list of strings, not a mapping (write ["a", "b"])`,
				`c.yaml:11:5: endpoints[0].exposFound: unknown key "exposFound"; did you mean "exposeFound"?`,
			},
		},
		{
			name: "endpoint keys from elsewhere",
			in:   "endpoints:\n  - name: a\n    search: {timeout: 1s}\n",
			want: []string{
				`c.yaml:6:5: endpoints[0].search: unknown key "search": an endpoint in search mode says discovery: search; the search: block (embeddings, timeout) is top-level and shared by every endpoint`,
			},
		},
		{
			name: "overrides may not take the meta-tools' names",
			in: "discovery: search\noverrides:\n  github/search: {name: search_tools}\n  files/call: {name: call_tool}\n" +
				"  files/prompts/search: {name: search_tools}\n",
			want: []string{
				`c.yaml:6:25: overrides["github/search"].name: "search_tools" is reserved: search and code mode (discovery: search or code) serve their meta-tools search_tools, call_tool, describe_tools and run_script under these names, and a tool renamed so would collide with one; choose another name (discovery: search is set at 4:12)`,
				`c.yaml:7:22: overrides["files/call"].name: "call_tool" is reserved: search and code mode (discovery: search or code) serve their meta-tools search_tools, call_tool, describe_tools and run_script under these names, and a tool renamed so would collide with one; choose another name (discovery: search is set at 4:12)`,
			},
		},
		{
			name: "meta-tool names are reserved even where search mode is not used",
			in:   "overrides:\n  github/search: {name: search_tools}\n",
			want: []string{
				`c.yaml:5:25: overrides["github/search"].name: "search_tools" is reserved: search and code mode (discovery: search or code) serve their meta-tools search_tools, call_tool, describe_tools and run_script under these names, and a tool renamed so would collide with one; choose another name`,
			},
		},
		{
			name: "search block shape",
			in:   "discovery: search\nsearch: [embeddings]\n",
			want: []string{`c.yaml:5:9: search: must be a mapping of keys to values, not a list`},
		},
		{
			name: "search keys",
			in:   "discovery: search\nsearch:\n  url: https://api.openai.com/v1\n  discovery: search\n  timeout: 60\n  embeddings:\n",
			want: []string{
				`c.yaml:6:3: search.url: unknown key "url": the embeddings API goes under embeddings, such as embeddings: {url: https://api.openai.com/v1, model: text-embedding-3-small}`,
				`c.yaml:7:3: search.discovery: unknown key "discovery": is set per endpoint, or at the top level for /mcp, not under search`,
				`c.yaml:8:12: search.timeout: 60 has no unit; write a duration such as "60s" (units: ms, s, m, h)`,
			},
		},
		{
			name: "search timeout bounds",
			in:   "discovery: search\nsearch:\n  timeout: 31s\n",
			want: []string{`c.yaml:6:12: search.timeout: 31s is out of range; it must be between 100ms and 30s`},
		},
		{
			name: "embeddings missing url and model",
			in:   "discovery: search\nsearch:\n  embeddings: {apiKeyEnv: K}\n",
			env:  map[string]string{"K": "k"},
			want: []string{
				`c.yaml:6:15: search.embeddings: missing url: the OpenAI-compatible embeddings API, such as https://api.openai.com/v1 (or its full .../embeddings URL)`,
				`c.yaml:6:15: search.embeddings: missing model: the embedding model's name, such as text-embedding-3-small`,
			},
		},
		{
			name: "embeddings values",
			in: "discovery: search\nsearch:\n  embeddings:\n    url: ftp://api.example.com/v1\n    model: [a]\n    apiKeyEnv: ${OPENAI_API_KEY}\n" +
				"    baseURL: https://x\n",
			want: []string{
				`c.yaml:7:10: search.embeddings.url: has scheme "ftp"; it must be an absolute http:// or https:// URL, such as "https://api.openai.com/v1"`,
				`c.yaml:8:12: search.embeddings.model: must be a string, not a list`,
				`c.yaml:9:16: search.embeddings.apiKeyEnv: names the variable, not a reference to it: write apiKeyEnv: OPENAI_API_KEY`,
				`c.yaml:10:5: search.embeddings.baseURL: unknown key "baseURL": did you mean "url" (an OpenAI-compatible base such as https://api.openai.com/v1, or the full .../embeddings URL)?`,
			},
		},
		{
			name: "apiKeyEnv is a name, and the key is never quoted",
			in:   "discovery: search\nsearch:\n  embeddings: {url: \"https://api.openai.com/v1\", model: m, apiKeyEnv: \"sk-proj-TOPSECRET\"}\n",
			want: []string{
				`c.yaml:6:71: search.embeddings.apiKeyEnv: is not an environment variable name (letters, digits and _, not starting with a digit); give the name of the variable that holds the key, such as OPENAI_API_KEY, never the key itself`,
			},
		},
		{
			name: "apiKeyEnv unset",
			in:   "discovery: search\nsearch:\n  embeddings:\n    url: https://api.openai.com/v1\n    model: text-embedding-3-small\n    apiKeyEnv: OPENAI_API_KEY\n",
			want: []string{
				`c.yaml:9:16: search.embeddings.apiKeyEnv: $OPENAI_API_KEY is not set; set it to the provider's API key, or remove apiKeyEnv to send the requests without a key`,
			},
		},
		{
			name: "apiKeyEnv empty",
			in:   "discovery: search\nsearch:\n  embeddings:\n    url: https://api.openai.com/v1\n    model: text-embedding-3-small\n    apiKeyEnv: OPENAI_API_KEY\n",
			env:  map[string]string{"OPENAI_API_KEY": ""},
			want: []string{
				`c.yaml:9:16: search.embeddings.apiKeyEnv: $OPENAI_API_KEY is empty; set it to the provider's API key, or remove apiKeyEnv to send the requests without a key`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(ups+tt.in), envOf(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; config:\n%s", cfg)
			}
			if strings.Contains(err.Error(), "TOPSECRET") {
				t.Errorf("an error quotes the key: %v", err)
			}
			diffLines(t, "problems", problemLines(t, err), tt.want)
		})
	}
}

// TestSearchWarnings: what is legal but has no effect.
func TestSearchWarnings(t *testing.T) {
	const ups = "upstreams: [{name: files, command: fs}]\n"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "alwaysList and exposeFound without search mode",
			in: "alwaysList: [\"files__*\"]\nexposeFound: true\nendpoints:\n  - name: a\n    discovery: list\n    alwaysList: [\"files__*\"]\n    exposeFound: true\n" +
				"  - name: b\n    exposeFound: false\n",
			want: []string{
				`c.yaml:2:1: alwaysList: has effect only with discovery: search or code; the top-level keys apply to /mcp only (an endpoint takes its own); set discovery: search at the top level, or remove alwaysList`,
				`c.yaml:3:1: exposeFound: has effect only with discovery: search or code; the top-level keys apply to /mcp only (an endpoint takes its own); set discovery: search at the top level, or remove exposeFound`,
				`c.yaml:7:5: endpoints[0].alwaysList: has effect only with discovery: search or code (discovery is list at 6:16); set discovery: search on this endpoint, or remove alwaysList`,
				`c.yaml:8:5: endpoints[0].exposeFound: has effect only with discovery: search or code (discovery is list at 6:16); set discovery: search on this endpoint, or remove exposeFound`,
			},
		},
		{
			name: "a resource glob in alwaysList",
			in:   "discovery: search\nalwaysList: [\"file:///*\", \"files__*\"]\n",
			want: []string{`c.yaml:3:14: alwaysList[0]: "file:///*" can match no tool: alwaysList selects tools by the names clients see, which have no ':'`},
		},
		{
			name: "embeddings and timeout unused",
			in:   "endpoints: [{name: a}]\nsearch:\n  embeddings: {url: \"https://api.openai.com/v1\", model: m}\n",
			want: []string{
				`c.yaml:4:3: search.embeddings: has effect only with discovery: search or code, which neither /mcp nor any endpoint uses; set discovery: search where clients should search for tools, or remove search.embeddings`,
			},
		},
		{
			name: "timeout without embeddings",
			in:   "discovery: search\nsearch: {timeout: 5s}\n",
			want: []string{`c.yaml:3:10: search.timeout: bounds the requests to the embeddings provider, and search.embeddings is not set, so it has no effect`},
		},
		{
			name: "a key over plain http",
			in:   "discovery: search\nsearch:\n  embeddings: {url: \"http://embed.internal/v1\", model: m, apiKeyEnv: K}\n",
			want: []string{`c.yaml:4:21: search.embeddings.url: the API key is sent over plain http to a non-loopback host, unencrypted; use https`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(ups+tt.in), envOf(map[string]string{"K": "k"}))
			if err != nil {
				t.Fatal(err)
			}
			diffLines(t, "warnings", warningLines(cfg.Warnings), tt.want)
		})
	}
}

package config

import (
	"errors"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// envOf returns an env lookup over a fixed map, so tests never depend on the
// machine's environment.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// problemLines returns the formatted errors of a Parse failure.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error is %T (%v), want *Problems", err, err)
	}
	return strings.Split(ps.Error(), "\n")
}

func warningLines(ws []Problem) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

const fullYAML = `listen: "0.0.0.0:9090"
publicURL: https://mcp.example.com
allowedOrigins: ["https://App.example.com"]
allowedHosts: [mcp.example.com, "localhost:9090"]
maxBodyBytes: 8MiB
pageSize: 50
resourceNamespacing: always
requestTimeout: 30s
maxRequestTimeout: 5m
sessionIdleTimeout: 1h
cursorSecret: "${CURSOR_SECRET}"
log: {level: debug, format: json}
upstreams:
  - name: files
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "${DATA_DIR:-/data}"]
    env: {LOG_LEVEL: info, PORT: 8080}
    cwd: /srv
    session: per-client
    maxInstances: 5
    idleTimeout: 2m
  - name: search
    url: https://search.internal/mcp
    headers: {X-Api-Key: "${SEARCH_KEY}"}
    session: shared
    protocol: modern
    prefix: ""
    timeout: 2m
  - name: old
    url: http://127.0.0.1:9000/sse
    protocol: legacy
    prefix: legacy_
    disabled: true
`

func TestParseFull(t *testing.T) {
	secret := strings.Repeat("s", 40)
	cfg, err := Parse("switchboard.yaml", []byte(fullYAML), envOf(map[string]string{
		"CURSOR_SECRET": secret, "SEARCH_KEY": "k-123",
	}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Config{
		Listen:              "0.0.0.0:9090",
		PublicURL:           "https://mcp.example.com",
		AllowedOrigins:      []string{"https://app.example.com"},
		AllowedHosts:        []string{"mcp.example.com", "localhost:9090"},
		MaxBodyBytes:        8 << 20,
		PageSize:            50,
		RequestTimeout:      30 * time.Second,
		MaxRequestTimeout:   5 * time.Minute,
		SessionIdleTimeout:  time.Hour,
		ListCacheTTL:        DefaultListCacheTTL,
		CursorSecret:        []byte(secret),
		Log:                 LogConfig{Level: slog.LevelDebug, Format: "json"},
		MaxToolNameLength:   DefaultMaxToolNameLength,
		ResourceNamespacing: NamespacingAlways,
		ClientHosts:         DefaultClientHosts(),
		Pinning:             Pinning{OnChange: PinWarn},
		Discovery:           DiscoveryList,
		Search:              Search{Timeout: DefaultSearchTimeout},
		Tasks:               DefaultTasks(),
		Upstreams: []Upstream{
			{
				Name: "files", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/data"},
				Env: map[string]string{"LOG_LEVEL": "info", "PORT": "8080"}, Cwd: "/srv",
				Session: SessionPerClient, Protocol: ProtocolAuto, Prefix: "files__", Timeout: 30 * time.Second,
				MaxInstances: 5, IdleTimeout: 2 * time.Minute,
			},
			{
				Name: "search", URL: "https://search.internal/mcp", Headers: map[string]string{"X-Api-Key": "k-123"},
				Session: SessionShared, Protocol: ProtocolModern, Prefix: "", Timeout: 2 * time.Minute,
				MaxInstances: DefaultMaxInstances, IdleTimeout: DefaultIdleTimeout,
			},
			{
				Name: "old", URL: "http://127.0.0.1:9000/sse", Session: SessionPerClient, Protocol: ProtocolLegacy, Prefix: "legacy_",
				Timeout: 30 * time.Second, MaxInstances: DefaultMaxInstances, IdleTimeout: DefaultIdleTimeout,
				Disabled: true,
			},
		},
		File: "switchboard.yaml",
	}
	cfg.sources = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Parse:\n got %#v\nwant %#v", cfg, want)
	}
	if got := cfg.Upstreams[0].Transport(); got != "stdio" {
		t.Errorf("files transport = %q, want stdio", got)
	}
	if got := cfg.Upstreams[1].Transport(); got != "http" {
		t.Errorf("search transport = %q, want http", got)
	}
	if out := cfg.String(); !strings.Contains(out, "    session: shared\n    protocol: modern\n") || !strings.Contains(out, "    protocol: auto\n") {
		t.Errorf("String does not show the protocol modes:\n%s", out)
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse("min.yaml", []byte("upstreams:\n  - name: a\n    command: a-server\n"), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Default()
	want.File = "min.yaml"
	want.Upstreams = []Upstream{{
		Name: "a", Command: "a-server", Session: SessionPerClient, Protocol: ProtocolAuto, Prefix: "a__",
		Timeout: DefaultRequestTimeout, MaxInstances: DefaultMaxInstances, IdleTimeout: DefaultIdleTimeout,
	}}
	cfg.sources = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Parse:\n got %#v\nwant %#v", cfg, want)
	}
}

// TestParseInvalid checks each kind of error, with its exact position and
// message. Positions are 1-based line:column of the offending key or value.
func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		file string // default c.yaml
		in   string
		env  map[string]string
		want []string
	}{
		{
			name: "unknown top-level key with suggestion",
			in:   "pagesize: 10\nupstreams: []\n",
			want: []string{`c.yaml:1:1: pagesize: unknown key "pagesize"; did you mean "pageSize"?`},
		},
		{
			name: "unknown upstream key with suggestion",
			in:   "upstreams:\n  - name: a\n    comand: x\n",
			want: []string{
				`c.yaml:2:5: upstreams[0]: needs command (a local program, run over stdio) or url (a remote MCP server over HTTP)`,
				`c.yaml:3:5: upstreams[0].comand: unknown key "comand"; did you mean "command"?`,
			},
		},
		{
			name: "unknown key without a close match lists the valid keys",
			in:   "upstreams: []\nfrobnicate: true\n",
			want: []string{`c.yaml:2:1: frobnicate: unknown key "frobnicate"; valid keys are listen, publicURL, replicaURL, allowedOrigins, allowedHosts, maxBodyBytes, pageSize, requestTimeout, maxRequestTimeout, sessionIdleTimeout, listCacheTTL, cursorSecret, log, console, auth, policy, redis, rateLimit, maxToolNameLength, clientHosts, resourceNamespacing, endpoints, overrides, pinning, discovery, alwaysList, exposeFound, codeMode, search, serverCard, tasks, upstreams, mcpServers, servers`},
		},
		{
			name: "envPassthrough refuses everything and misplaced stars",
			in:   "upstreams:\n  - name: a\n    command: x\n    envPassthrough: [\"*\", \"A*B\", \"OK_*\", \"HOME\"]\n  - name: b\n    url: http://x\n    envPassthrough: [HOME]\n",
			want: []string{
				`c.yaml:4:22: upstreams[0].envPassthrough[0]: "*" would pass the gateway's whole environment, its secrets included, to the child; name the variables (a prefix such as "AWS_*" is allowed)`,
				`c.yaml:4:27: upstreams[0].envPassthrough[1]: "A*B": '*' may only end a prefix, as in "AWS_*"`,
				`c.yaml:7:5: upstreams[1].envPassthrough: envPassthrough only applies to a command (stdio) upstream; remove it`,
			},
		},
		{
			name: "type key from other tools is explained",
			in:   "upstreams:\n  - name: a\n    type: stdio\n    command: x\n",
			want: []string{`c.yaml:3:5: upstreams[0].type: unknown key "type": the transport follows from command (a local program over stdio) or url (a remote server over HTTP); remove it`},
		},
		{
			name: "bad name",
			in:   "upstreams:\n  - name: a\n    command: x\n  - name: My Files\n    command: y\n",
			want: []string{`c.yaml:4:11: upstreams[1].name: "My Files" must match [a-z0-9-]+ (lowercase letters, digits and '-'); try "my-files"`},
		},
		{
			name: "missing and empty name",
			in:   "upstreams:\n  - command: x\n  - name: \"\"\n    command: y\n",
			want: []string{
				`c.yaml:2:5: upstreams[0]: missing name; every upstream needs one, such as name: files`,
				`c.yaml:3:11: upstreams[1].name: is empty; use lowercase letters, digits and '-', such as "files"`,
			},
		},
		{
			name: "duplicate names name both locations",
			in:   "upstreams:\n  - name: files\n    command: x\n  - name: files\n    url: https://x.example/mcp\n",
			want: []string{`c.yaml:4:11: upstreams[1].name: duplicate upstream name "files"; the first is at 2:11; names must be unique`},
		},
		{
			name: "both command and url",
			in:   "upstreams:\n  - name: a\n    command: x\n    url: https://x.example/mcp\n",
			want: []string{`c.yaml:4:10: upstreams[0].url: command (at 3:14) and url are both set; an upstream is either a local program (command) or a remote server (url), so remove one`},
		},
		{
			name: "neither command nor url",
			in:   "upstreams:\n  - name: a\n    session: shared\n",
			want: []string{`c.yaml:2:5: upstreams[0]: needs command (a local program, run over stdio) or url (a remote MCP server over HTTP)`},
		},
		{
			name: "settings for the other transport",
			in:   "upstreams:\n  - name: a\n    url: https://x.example/mcp\n    args: [x]\n  - name: b\n    command: b\n    headers: {X-A: b}\n",
			want: []string{
				`c.yaml:4:5: upstreams[0].args: args only applies to a command (stdio) upstream; remove it`,
				`c.yaml:7:5: upstreams[1].headers: headers only apply to a url (HTTP) upstream; for a command use env`,
			},
		},
		{
			name: "bad session mode",
			in:   "upstreams:\n  - name: a\n    command: x\n    session: perclient\n  - name: b\n    command: x\n    session: pooled\n",
			want: []string{
				`c.yaml:4:14: upstreams[0].session: "perclient" is not a session mode; did you mean "per-client"? (per-client or shared)`,
				`c.yaml:7:14: upstreams[1].session: "pooled" is not a session mode; use per-client (each client gets its own upstream session) or shared (one session for all clients)`,
			},
		},
		{
			name: "bad protocol mode",
			in:   "upstreams:\n  - name: a\n    command: x\n    protocol: modrn\n  - name: b\n    url: https://b.example/mcp\n    protocol: 2026-07-28\n  - name: c\n    command: x\n    protocol: [auto]\n",
			want: []string{
				`c.yaml:4:15: upstreams[0].protocol: "modrn" is not a protocol mode; did you mean "modern"? (auto, legacy or modern)`,
				`c.yaml:7:15: upstreams[1].protocol: "2026-07-28" is not a protocol mode; use auto (detect the upstream's era), legacy (initialize and sessions) or modern (stateless 2026-07-28)`,
				`c.yaml:10:15: upstreams[2].protocol: must be a string, not a list`,
			},
		},
		{
			name: "bad durations",
			in:   "requestTimeout: 60\nsessionIdleTimeout: soon\nmaxRequestTimeout: -1s\nupstreams:\n  - name: a\n    command: x\n    idleTimeout: [1]\n",
			want: []string{
				`c.yaml:1:17: requestTimeout: 60 has no unit; write a duration such as "60s" (units: ms, s, m, h)`,
				`c.yaml:2:21: sessionIdleTimeout: "soon" is not a duration; write a number with a unit, such as "60s", "10m" or "1h30m"`,
				`c.yaml:3:20: maxRequestTimeout: must be greater than zero, not "-1s"`,
				`c.yaml:7:18: upstreams[0].idleTimeout: must be a duration such as "60s" or "10m", not a list`,
			},
		},
		{
			name: "timeouts above the hard maximum",
			in:   "requestTimeout: 20m\nupstreams:\n  - name: a\n    command: x\n    timeout: 1h\n",
			want: []string{
				`c.yaml:1:17: requestTimeout: requestTimeout (20m0s) is longer than maxRequestTimeout (10m0s); raise maxRequestTimeout or lower requestTimeout`,
				`c.yaml:5:14: upstreams[0].timeout: 1h0m0s is longer than maxRequestTimeout (10m0s), which caps every request; raise maxRequestTimeout or lower this`,
			},
		},
		{
			name: "bad sizes",
			in:   "maxBodyBytes: 1.5MiB\nupstreams: []\n",
			want: []string{`c.yaml:1:15: maxBodyBytes: "1.5MiB" is not a size; write a number of bytes or a size such as "4MiB" (units: B, KB, MB, GB, KiB, MiB, GiB)`},
		},
		{
			name: "size with unknown unit",
			in:   "maxBodyBytes: 4M\nupstreams: []\n",
			want: []string{`c.yaml:1:15: maxBodyBytes: unknown unit "M"; write a number of bytes or a size such as "4MiB" (units: B, KB, MB, GB, KiB, MiB, GiB)`},
		},
		{
			name: "zero size",
			in:   "maxBodyBytes: 0\nupstreams: []\n",
			want: []string{`c.yaml:1:15: maxBodyBytes: must be greater than zero; write a number of bytes or a size such as "4MiB" (units: B, KB, MB, GB, KiB, MiB, GiB)`},
		},
		{
			name: "bad url scheme and missing host",
			in:   "publicURL: mcp.example.com\nupstreams:\n  - name: a\n    url: ftp://x.example/mcp\n  - name: b\n    url: \"https://\"\n",
			want: []string{
				`c.yaml:1:12: publicURL: has no scheme; it must be an absolute http:// or https:// URL, such as "https://search.internal/mcp"`,
				`c.yaml:4:10: upstreams[0].url: has scheme "ftp"; it must be an absolute http:// or https:// URL, such as "https://search.internal/mcp"`,
				`c.yaml:6:10: upstreams[1].url: has no host; it must be an absolute http:// or https:// URL, such as "https://search.internal/mcp"`,
			},
		},
		{
			name: "bad prefixes",
			in:   "upstreams:\n  - name: a\n    command: x\n    prefix: \"a.b/\"\n  - name: b\n    command: x\n    prefix: " + strings.Repeat("p", 33) + "\n  - name: c\n    command: x\n    prefix:\n",
			want: []string{
				`c.yaml:4:13: upstreams[0].prefix: "a.b/" may only contain letters, digits, '_' and '-', because clients reject other characters in tool names`,
				`c.yaml:7:13: upstreams[1].prefix: "` + strings.Repeat("p", 33) + `" is 33 characters; the limit is 32, to leave room in 64-character tool names`,
				`c.yaml:10:12: upstreams[2].prefix: has no value; write prefix: "" to keep tool names unchanged, or remove the key for the default "<name>__"`,
			},
		},
		{
			name: "unset environment variable",
			in:   "upstreams:\n  - name: a\n    url: https://x.example/mcp\n    headers:\n      Authorization: \"Bearer ${API_TOKEN}\"\n",
			want: []string{`c.yaml:5:22: upstreams[0].headers.Authorization: environment variable API_TOKEN is not set; set it, or give a default with ${API_TOKEN:-value}`},
		},
		{
			name: "bad variable references",
			in:   "upstreams:\n  - name: a\n    command: x\n    args: [\"${input:key}\", \"${1X}\", \"${}\", \"${OPEN\"]\n",
			want: []string{
				`c.yaml:4:12: upstreams[0].args[0]: ${input:key} is a VS Code input variable, which the gateway cannot prompt for; use an environment variable such as ${API_KEY}`,
				`c.yaml:4:28: upstreams[0].args[1]: ${1X}: "1X" is not a variable name (letters, digits and _, not starting with a digit); write "$$" for a literal "$"`,
				`c.yaml:4:37: upstreams[0].args[2]: ${} names no variable; write ${NAME}, or "$$" for a literal "$"`,
				`c.yaml:4:44: upstreams[0].args[3]: "${OPEN" has no closing "}"; write "$$" for a literal "$"`,
			},
		},
		{
			name: "short cursorSecret",
			in:   "cursorSecret: ${SECRET}\nupstreams: []\n",
			env:  map[string]string{"SECRET": "hunter2"},
			want: []string{`c.yaml:1:15: cursorSecret: is 7 bytes (after expanding ${SECRET}); it must be at least 32 bytes (generate one with: openssl rand -hex 32), or be left out to generate a key at start`},
		},
		{
			name: "pageSize out of range",
			in:   "pageSize: 0\nupstreams: []\n",
			want: []string{`c.yaml:1:11: pageSize: 0 is out of range; it must be between 1 and 1000`},
		},
		{
			name: "resourceNamespacing: a typo, and a value no mode has",
			in:   "resourceNamespacing: alwys\nupstreams: []\n",
			want: []string{`c.yaml:1:22: resourceNamespacing: "alwys" is not a namespacing mode; did you mean "always"? (auto, always or never)`},
		},
		{
			name: "resourceNamespacing: not a mode",
			in:   "resourceNamespacing: true\nupstreams: []\n",
			want: []string{`c.yaml:1:22: resourceNamespacing: "true" is not a namespacing mode; use auto (namespace URIs two upstreams offer), always or never`},
		},
		{
			name: "pageSize too large and quoted",
			in:   "pageSize: 1001\nupstreams:\n  - name: a\n    command: x\n    maxInstances: \"5\"\n",
			want: []string{
				`c.yaml:1:11: pageSize: 1001 is out of range; it must be between 1 and 1000`,
				`c.yaml:5:19: upstreams[0].maxInstances: must be a number, not a string (write 5 without quotes)`,
			},
		},
		{
			name: "listen, origins, hosts, log",
			in: "listen: localhost\nallowedOrigins: [\"*\", \"https://a.example/\"]\nallowedHosts: [\"https://h.example\"]\n" +
				"log: {level: verbose, format: xml}\nupstreams: []\n",
			want: []string{
				`c.yaml:1:9: listen: "localhost" is not host:port; write host:port, such as "127.0.0.1:8080", or ":8080" for every interface`,
				`c.yaml:2:18: allowedOrigins[0]: "*" is not allowed: accepting any origin would let any web page drive the gateway through a browser; list each origin, such as "https://app.example.com"`,
				`c.yaml:2:23: allowedOrigins[1]: "https://a.example/" has a path; an origin is only scheme://host[:port] (write "https://a.example")`,
				`c.yaml:3:16: allowedHosts[0]: "https://h.example" is not a host; write a name or address with an optional port, such as "mcp.example.com" or "[::1]:8080" (no scheme, path or wildcard)`,
				`c.yaml:4:14: log.level: "verbose" is not a log level; use debug, info, warn or error`,
				`c.yaml:4:31: log.format: "xml" is not a log format; use text or json`,
			},
		},
		{
			name: "headers the gateway owns, and one header twice",
			in:   "upstreams:\n  - name: a\n    url: https://x.example/mcp\n    headers:\n      Mcp-Session-Id: x\n      X-Key: a\n      x-key: b\n",
			want: []string{
				`c.yaml:5:7: upstreams[0].headers.Mcp-Session-Id: Mcp-Session-Id is set by the gateway for each request and cannot be configured`,
				`c.yaml:7:7: upstreams[0].headers.x-key: x-key is the same header as X-Key (header names ignore case); keep one`,
			},
		},
		{
			name: "duplicate mapping key",
			in:   "pageSize: 10\npageSize: 20\nupstreams: []\n",
			want: []string{`c.yaml:2:1: pageSize: duplicate key "pageSize"; it is already set at 1:1`},
		},
		{
			name: "wrong shapes",
			in:   "upstreams:\n  name: a\n",
			want: []string{`c.yaml:2:3: upstreams: must be a list of upstreams (each item starts with "- name:"), not a mapping`},
		},
		{
			name: "upstreams and mcpServers together",
			in:   "upstreams:\n  - name: a\n    command: x\nmcpServers:\n  b: {command: y}\n",
			want: []string{`c.yaml:4:1: mcpServers: upstreams is already set at 1:1; use either upstreams or mcpServers, not both (move these servers into upstreams)`},
		},
		{
			name: "yaml syntax error",
			in:   "upstreams:\n  - name: a\n   command: x\n",
			want: []string{`c.yaml:3: invalid YAML: did not find expected '-' indicator`},
		},
		{
			name: "yaml error on the first line",
			in:   "listen: a: b\n",
			want: []string{`c.yaml:1: invalid YAML: mapping values are not allowed in this context`},
		},
		{
			name: "unclosed yaml flow list is reported where it is",
			in:   "listen: x\nupstreams:\n  - name: a\n    args: [a, b\n  - name: b\n",
			want: []string{`c.yaml:4: invalid YAML: did not find expected ',' or ']'`},
		},
		{
			name: "tab indentation",
			in:   "upstreams:\n  - name: a\n\tcommand: x\n",
			want: []string{`c.yaml:3: invalid YAML: found a tab character that violates indentation`},
		},
		{
			name: "two yaml documents",
			in:   "upstreams: []\n---\nlisten: x\n",
			want: []string{`c.yaml:2:1: a second YAML document starts here; the config file must hold exactly one (remove the "---" separator)`},
		},
		{
			name: "json syntax error has line and column",
			file: "c.json",
			in:   "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n",
			want: []string{`c.json:3:26: invalid JSON: unexpected '"'; expected ',' or "}" (is a comma missing?)`},
		},
		{
			name: "unclosed json",
			file: "c.json",
			in:   "{\"mcpServers\": {\n",
			want: []string{`c.json:2:1: invalid JSON: unexpected end of file; "{" opened at 1:16 is never closed`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "c.yaml"
			}
			cfg, err := Parse(file, []byte(tt.in), envOf(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; config:\n%s", cfg)
			}
			diffLines(t, "problems", problemLines(t, err), tt.want)
		})
	}
}

// TestManyProblems checks that every problem of a file is reported in one
// pass, in file order, against testdata/many.golden (go test -update
// rewrites it).
func TestManyProblems(t *testing.T) {
	data, err := os.ReadFile("testdata/many.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("many.yaml", data, envOf(nil))
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error = %v, want *Problems", err)
	}
	got := "errors:\n" + ps.Error() + "\nwarnings:\n" + strings.Join(warningLines(ps.Warnings), "\n") + "\n"
	golden := "testdata/many.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "many.yaml", strings.Split(got, "\n"), strings.Split(string(want), "\n"))
	if len(ps.List) < 10 {
		t.Errorf("got %d problems, want every one of the file's mistakes", len(ps.List))
	}
}

func TestMCPServers(t *testing.T) {
	in := `{
  "mcpServers": {
    "Web Search": {"url": "https://search.example.com/mcp", "type": "sse", "headers": {"X-Key": "${KEY}"}},
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                   "env": {"DEBUG": "1"}, "autoApprove": ["read_file"], "timeout": 30},
    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "session": "shared", "protocol": "legacy", "disabled": true}
  },
  "globalShortcut": "Ctrl+Space"
}`
	cfg, err := Parse("claude_desktop_config.json", []byte(in), envOf(map[string]string{"KEY": "secret-key"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var names []string
	for _, u := range cfg.Upstreams {
		names = append(names, u.Name+"/"+u.Transport()+"/"+string(u.Session))
	}
	diffLines(t, "upstreams (sorted by name)", names, []string{"fetch/stdio/shared", "filesystem/stdio/per-client", "web-search/http/per-client"})
	fs := cfg.Upstreams[1]
	if fs.Timeout != 30*time.Second || fs.Env["DEBUG"] != "1" || fs.Prefix != "filesystem__" {
		t.Errorf("filesystem = %+v", fs)
	}
	if !cfg.Upstreams[0].Disabled || cfg.Upstreams[0].Protocol != ProtocolLegacy {
		t.Errorf("fetch = %+v", cfg.Upstreams[0])
	}
	if ws := cfg.Upstreams[2]; ws.Headers["X-Key"] != "secret-key" || ws.Prefix != "web-search__" {
		t.Errorf("web-search = %+v", ws)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`claude_desktop_config.json:3:5: mcpServers["Web Search"]: server name "Web Search" is used as upstream name "web-search" (upstream names are lowercase letters, digits and '-'); its tools get that name as prefix unless prefix is set`,
		`claude_desktop_config.json:5:43: mcpServers.filesystem.autoApprove: unknown key "autoApprove"; valid keys are command, args, env, envPassthrough, cwd, url, headers, type, disabled, session, protocol, prefix, timeout, maxInstances, idleTimeout (ignored)`,
		`claude_desktop_config.json:8:3: globalShortcut: unknown key "globalShortcut"; valid keys are listen, publicURL, replicaURL, allowedOrigins, allowedHosts, maxBodyBytes, pageSize, requestTimeout, maxRequestTimeout, sessionIdleTimeout, listCacheTTL, cursorSecret, log, console, auth, policy, redis, rateLimit, maxToolNameLength, clientHosts, resourceNamespacing, endpoints, overrides, pinning, discovery, alwaysList, exposeFound, codeMode, search, serverCard, tasks, upstreams, mcpServers, servers (ignored)`,
	})
}

func TestMCPServersInvalid(t *testing.T) {
	in := `{"mcpServers": {
  "Files": {"command": "a"},
  "files": {"command": "b"},
  "???": {"command": "c"},
  "remote": {"type": "stdio", "url": "https://r.example/mcp"},
  "odd": {"type": "websocket", "command": "d"},
  "nothing": {}
}}`
	_, err := Parse("mcp.json", []byte(in), nil)
	diffLines(t, "problems", problemLines(t, err), []string{
		`mcp.json:3:3: mcpServers.files: duplicate upstream name "files"; "Files" (at 2:3) and "files" both become "files"; names must be unique`,
		`mcp.json:4:3: mcpServers["???"]: server name "???" has no letters or digits to make an upstream name from; rename it using a-z, 0-9 and '-'`,
		`mcp.json:5:22: mcpServers.remote.type: type is "stdio" but url is set; a stdio server needs command (or set type to "http")`,
		`mcp.json:6:19: mcpServers.odd.type: "websocket" is not a transport type; use stdio, http, sse or streamable-http (or leave type out)`,
		`mcp.json:7:14: mcpServers.nothing: needs command (a local program, run over stdio) or url (a remote MCP server over HTTP)`,
	})
}

// TestVSCodeServers covers VS Code's mcp.json: top-level "servers", explicit
// types, an "inputs" section, and JSONC comments and trailing commas.
func TestVSCodeServers(t *testing.T) {
	in := `{
  // VS Code allows comments
  "inputs": [{"type": "promptString", "id": "key"}],
  "servers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", /* block */ },
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "${env:TZ}"}},
  },
}`
	cfg, err := Parse(".vscode/mcp.json", []byte(in), envOf(map[string]string{"TZ": "UTC"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Upstreams) != 2 || cfg.Upstreams[0].Name != "github" || cfg.Upstreams[1].Env["TZ"] != "UTC" {
		t.Errorf("upstreams = %+v", cfg.Upstreams)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`.vscode/mcp.json:3:3: inputs: unknown key "inputs"; valid keys are listen, publicURL, replicaURL, allowedOrigins, allowedHosts, maxBodyBytes, pageSize, requestTimeout, maxRequestTimeout, sessionIdleTimeout, listCacheTTL, cursorSecret, log, console, auth, policy, redis, rateLimit, maxToolNameLength, clientHosts, resourceNamespacing, endpoints, overrides, pinning, discovery, alwaysList, exposeFound, codeMode, search, serverCard, tasks, upstreams, mcpServers, servers (ignored)`,
	})

	_, err = Parse("mcp.json", []byte(`{"servers": {"gh": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${input:gh-token}"}}}}`), nil)
	diffLines(t, "input variable", problemLines(t, err), []string{
		`mcp.json:1:98: servers.gh.headers.Authorization: ${input:gh-token} is a VS Code input variable, which the gateway cannot prompt for; use an environment variable such as ${API_KEY}`,
	})
}

func TestExpand(t *testing.T) {
	env := envOf(map[string]string{"A": "alpha", "EMPTY": "", "N_1": "n"})
	tests := []struct {
		in, want string
		errs     int
	}{
		{"plain", "plain", 0},
		{"${A}", "alpha", 0},
		{"x-${A}-${N_1}", "x-alpha-n", 0},
		{"${env:A}", "alpha", 0},
		{"${MISSING:-def}", "def", 0},
		{"${EMPTY:-def}", "def", 0},
		{"${A:-def}", "alpha", 0},
		{"${MISSING:-}", "", 0},
		{"${EMPTY}", "", 0},
		{"$${A}", "${A}", 0},
		{"cost: $$5", "cost: $5", 0},
		{"pa$word", "pa$word", 0},
		{"trailing $", "trailing $", 0},
		{"${MISSING}", "", 1},
		{"${A", "${A", 1},
		{"${MISSING} ${ALSO_MISSING}", " ", 2},
	}
	for _, tt := range tests {
		got, errs := expand(tt.in, env)
		if got != tt.want || len(errs) != tt.errs {
			t.Errorf("expand(%q) = %q, %d errors %q; want %q, %d errors", tt.in, got, len(errs), errs, tt.want, tt.errs)
		}
	}
}

// TestSecretsStayHidden: expanded values must not appear in errors or in
// the printed configuration.
func TestSecretsStayHidden(t *testing.T) {
	const secret = "TOPSECRET-VALUE"
	env := envOf(map[string]string{"URL": "ftp://user:" + secret + "@x", "TOKEN": secret, "PASS": secret})
	_, err := Parse("c.yaml", []byte("cursorSecret: ${TOKEN}\nupstreams:\n  - name: a\n    url: ${URL}\n"), env)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error leaks the secret or is missing: %v", err)
	}

	in := "cursorSecret: \"${TOKEN}${TOKEN}${TOKEN}\"\nupstreams:\n" +
		"  - name: a\n    command: x\n    args: [\"--password=${PASS}\"]\n    env: {K: \"${TOKEN}\"}\n" +
		"  - name: b\n    url: https://u:literal-pw@b.example/mcp\n    headers: {Authorization: \"Bearer ${TOKEN}\"}\n"
	cfg, err := Parse("c.yaml", []byte(in), env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.Upstreams[0].Args[0] != "--password="+secret {
		t.Fatalf("args not expanded: %q", cfg.Upstreams[0].Args)
	}
	out := cfg.String()
	if strings.Contains(out, secret) || strings.Contains(out, "literal-pw") {
		t.Errorf("String leaks a secret:\n%s", out)
	}
	for _, want := range []string{`"--password=${PASS}"`, `"K": "<redacted>"`, `"Authorization": "<redacted>"`, "cursorSecret: <redacted>  # 45 bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("String lacks %s:\n%s", want, out)
		}
	}
	r := cfg.Redacted()
	if r.Upstreams[1].Headers["Authorization"] != "<redacted>" || string(r.CursorSecret) != "<redacted>" {
		t.Errorf("Redacted = %+v", r)
	}
	if cfg.Upstreams[1].Headers["Authorization"] != "Bearer "+secret {
		t.Errorf("Redacted changed the original config")
	}
}

func TestJSONNativeSchema(t *testing.T) {
	in := "{\n\t\"listen\": \"127.0.0.1:9000\",\n\t\"pageSize\": 20,\n\t\"upstreams\": [\n\t\t{\"name\": \"a\", \"url\": \"https:\\/\\/a.example\\/mcp\", \"timeout\": \"5s\"}\n\t]\n}\n"
	cfg, err := Parse("switchboard.json", []byte(in), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.Listen != "127.0.0.1:9000" || cfg.PageSize != 20 || cfg.Upstreams[0].URL != "https://a.example/mcp" || cfg.Upstreams[0].Timeout != 5*time.Second {
		t.Errorf("cfg = %+v", cfg)
	}
	// Columns count characters, tabs as one.
	_, err = Parse("switchboard.json", []byte("{\n\t\"upstreams\": [\n\t\t{\"name\": \"A\", \"command\": \"x\", \"timeout\": 5}\n\t]\n}"), nil)
	diffLines(t, "json problems", problemLines(t, err), []string{
		`switchboard.json:3:12: upstreams[0].name: "A" must match [a-z0-9-]+ (lowercase letters, digits and '-'); try "a"`,
		`switchboard.json:3:44: upstreams[0].timeout: 5 has no unit; write a duration such as "5s" (units: ms, s, m, h)`,
	})
	// Data starting with "{" is JSON whatever the file is called.
	if _, err := Parse("config", []byte(`{"upstreams": [{"name": "a", "command": "x"}]}`), nil); err != nil {
		t.Errorf("JSON without .json name: %v", err)
	}
}

func TestYAMLAnchorsAndMerge(t *testing.T) {
	in := `common: &common
upstreams:
  - &base
    name: a
    command: server
    session: shared
    timeout: 5s
  - <<: *base
    name: b
`
	_, err := Parse("c.yaml", []byte(in), nil)
	diffLines(t, "unknown anchor holder", problemLines(t, err), []string{`c.yaml:1:1: common: unknown key "common"; valid keys are listen, publicURL, replicaURL, allowedOrigins, allowedHosts, maxBodyBytes, pageSize, requestTimeout, maxRequestTimeout, sessionIdleTimeout, listCacheTTL, cursorSecret, log, console, auth, policy, redis, rateLimit, maxToolNameLength, clientHosts, resourceNamespacing, endpoints, overrides, pinning, discovery, alwaysList, exposeFound, codeMode, search, serverCard, tasks, upstreams, mcpServers, servers`})
	cfg, err := Parse("c.yaml", []byte(strings.TrimPrefix(in, "common: &common\n")), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	b := cfg.Upstreams[1]
	if b.Name != "b" || b.Command != "server" || b.Session != SessionShared || b.Timeout != 5*time.Second {
		t.Errorf("merged upstream = %+v", b)
	}
}

func TestWarnings(t *testing.T) {
	in := "upstreams:\n" +
		"  - name: a\n    url: http://search.internal/mcp\n    headers: {X-Key: k}\n    maxInstances: 3\n" +
		"  - name: b\n    command: x\n    session: shared\n    idleTimeout: 1m\n    prefix: \"\"\n" +
		"  - name: c\n    command: y\n    prefix: \"\"\n"
	cfg, err := Parse("c.yaml", []byte(in), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`c.yaml:3:10: upstreams[0].url: headers are sent over plain http to a non-loopback host, unencrypted; use https if they carry credentials`,
		`c.yaml:5:19: upstreams[0].maxInstances: has no effect: it caps the child processes of a per-client stdio upstream, and this one is a url (HTTP) upstream`,
		`c.yaml:9:18: upstreams[1].idleTimeout: has no effect on a shared upstream, whose one session stays open`,
		`c.yaml:13:13: upstreams[2].prefix: prefix "" is also used by upstreams[1] at 10:13; tools with the same name collide, and the later one is skipped`,
	})

	for _, in := range []string{"upstreams: []\n", "upstreams:\n  - {name: a, command: x, disabled: true}\n"} {
		cfg, err := Parse("c.yaml", []byte(in), nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Message, "empty catalog") {
			t.Errorf("Parse(%q) warnings = %v, want one about an empty catalog", in, cfg.Warnings)
		}
	}
}

// TestEmptyFile: a file with no configuration in it is what a truncated or half-written write leaves; it is an
// error, never an empty configuration (which a reload would apply by removing every upstream).
func TestEmptyFile(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"c.yaml", ""}, {"c.yaml", "  \n\n"}, {"c.yaml", "# only a comment\n"}, {"c.yaml", "\xef\xbb\xbf"},
		{"c.json", ""}, {"c.json", "\n"},
	} {
		_, err := Parse(tc.name, []byte(tc.in), nil)
		if err == nil || !strings.Contains(err.Error(), "the file is empty") {
			t.Errorf("Parse(%s, %q) = %v, want the empty-file problem", tc.name, tc.in, err)
		}
	}
	if _, err := Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "x"}`), nil); err == nil {
		t.Error("a truncated JSON file parses")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.yaml")
	t.Setenv("SWITCHBOARD_TEST_CMD", "my-server")
	if err := os.WriteFile(path, []byte("upstreams:\n  - name: a\n    command: ${SWITCHBOARD_TEST_CMD}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.File != path || cfg.Upstreams[0].Command != "my-server" {
		t.Errorf("Load = %+v", cfg)
	}
	_, err = Load(filepath.Join(dir, "missing.yaml"))
	var ps *Problems
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &ps) {
		t.Errorf("Load(missing) = %v, want a not-exist error that is not *Problems", err)
	}
}

// TestReplicaURL: replicaURL expands ${VAR} (the pod's address is known only at run time) and must come out as an
// absolute http(s) URL.
func TestReplicaURL(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"POD_IP": "10.1.2.3"}[k], k == "POD_IP" }
	cfg, err := Parse("c.yaml", []byte("replicaURL: \"http://${POD_IP}:8080/mcp\"\nupstreams:\n  - name: a\n    command: x\n"), env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.ReplicaURL != "http://10.1.2.3:8080/mcp" {
		t.Errorf("ReplicaURL = %q, want the expanded URL", cfg.ReplicaURL)
	}
	if _, err := Parse("c.yaml", []byte("replicaURL: \"10.1.2.3:8080\"\nupstreams:\n  - name: a\n    command: x\n"), env); err == nil || !strings.Contains(err.Error(), "replicaURL") {
		t.Errorf("Parse(relative replicaURL) = %v, want a replicaURL problem", err)
	}
}

// TestExamples keeps the shipped example files loadable.
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../../../deploy/examples/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, p := range paths {
		if strings.HasSuffix(p, "-values.yaml") || strings.HasSuffix(p, ".lock") {
			continue // Helm values files (charts/switchboard renders them into a config and checks that); lock files
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(filepath.Base(p), data, envOf(nil))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(cfg.Upstreams) == 0 {
			t.Errorf("%s: no upstreams", p)
		}
	}
	data, err := os.ReadFile("../../../deploy/examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("demo.yaml", data, envOf(map[string]string{"TMPDIR": "/var/tmp"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("demo warnings: %v", cfg.Warnings)
	}
	ev, mem := cfg.Upstreams[0], cfg.Upstreams[1]
	if cfg.Listen != "127.0.0.1:8080" || ev.Name != "everything" || ev.Session != SessionPerClient ||
		ev.Command != "npx" || !reflect.DeepEqual(ev.Args, []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}) ||
		mem.Name != "memory" || mem.Session != SessionShared || mem.Env["MEMORY_FILE_PATH"] != "/var/tmp/switchboard-demo-memory.jsonl" {
		t.Errorf("demo = %s", cfg)
	}
}

func TestIsLoopback(t *testing.T) {
	for in, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:80": true, "LOCALHOST:1": true, "[::1]:8080": true, "127.1.2.3:9": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": true,
	} {
		if got := IsLoopback(in); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestOriginAndHostDefaults(t *testing.T) {
	local := Default()
	remote := Default()
	remote.Listen = "0.0.0.0:8080"
	remote.PublicURL = "https://mcp.example.com"
	explicit := Default()
	explicit.AllowedOrigins = []string{"https://app.example.com"}
	explicit.AllowedHosts = []string{"mcp.example.com", "10.0.0.5:8080"}

	origins := []struct {
		c      *Config
		origin string
		want   bool
	}{
		{local, "", true},
		{local, "http://localhost:6274", true},
		{local, "http://127.0.0.1", true},
		{local, "http://[::1]:3000", true},
		{local, "https://evil.example", false},
		{local, "http://localhost.evil.example", false},
		{remote, "https://mcp.example.com", true},
		{remote, "http://localhost:6274", false},
		{explicit, "https://APP.example.com", true},
		{explicit, "http://localhost:6274", false},
	}
	for _, tt := range origins {
		if got := tt.c.OriginAllowed(tt.origin); got != tt.want {
			t.Errorf("listen %s: OriginAllowed(%q) = %v, want %v", tt.c.Listen, tt.origin, got, tt.want)
		}
	}
	hosts := []struct {
		c    *Config
		host string
		want bool
	}{
		{local, "localhost:8080", true},
		{local, "127.0.0.1", true},
		{local, "[::1]:8080", true},
		{local, "attacker.example:8080", false},
		{remote, "anything.example", true},
		{explicit, "mcp.example.com:443", true},
		{explicit, "10.0.0.5:8080", true},
		{explicit, "10.0.0.5:9090", false},
		{explicit, "localhost:8080", false},
		{local, "", false},
	}
	for _, tt := range hosts {
		if got := tt.c.HostAllowed(tt.host); got != tt.want {
			t.Errorf("HostAllowed(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := keys(topFields())
	for in, want := range map[string]string{
		"pagesize": "pageSize", "page_size": "pageSize", "upstream": "upstreams", "lisen": "listen",
		"publicUrl": "publicURL", "cursor_secret": "cursorSecret", "zzz": "", "allowedOrigin": "allowedOrigins",
	} {
		if got := suggest(in, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormaliseName(t *testing.T) {
	for in, want := range map[string]string{
		"files": "files", "My Files": "my-files", "web_search.v2": "web-search-v2", "-x_y-": "x-y",
		"GitHub": "github", "日本": "", strings.Repeat("a", 70): strings.Repeat("a", 64),
	} {
		if got := normaliseName(in); got != want {
			t.Errorf("normaliseName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProblemString(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{Problem{File: "f", Line: 1, Col: 2, Path: "a.b", Message: "m"}, "f:1:2: a.b: m"},
		{Problem{File: "f", Line: 3, Message: "m"}, "f:3: m"},
		{Problem{File: "f", Path: "upstreams", Message: "m"}, "f: upstreams: m"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestDocsExamples parses every YAML block of docs/configuration.md that
// configures upstreams, so the documentation cannot drift from the parser.
func TestDocsExamples(t *testing.T) {
	data, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"SWITCHBOARD_CURSOR_SECRET": strings.Repeat("x", 64), "SEARCH_KEY": "k", "OPENAI_API_KEY": "k"})
	blocks := strings.Split(string(data), "```yaml\n")[1:]
	n := 0
	for i, b := range blocks {
		b = b[:strings.Index(b, "```")]
		if !strings.Contains(b, "upstreams:") {
			continue
		}
		n++
		if _, err := Parse("configuration.md", []byte(b), env); err != nil {
			t.Errorf("yaml block %d:\n%s\n%v", i, b, err)
		}
	}
	if n < 2 {
		t.Errorf("found %d examples with upstreams, want at least 2", n)
	}
}

func TestEnvPassthrough(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("upstreams:\n  - name: a\n    command: x\n    envPassthrough: [AWS_*, GITHUB_TOKEN]\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Upstreams[0].EnvPassthrough, []string{"AWS_*", "GITHUB_TOKEN"}; !slices.Equal(got, want) {
		t.Errorf("EnvPassthrough = %q, want %q", got, want)
	}
}

// TestToolNameBudget: maxToolNameLength and clientHosts, and the warning for a host that would reject names the
// budget allows (at the line that causes it).
func TestToolNameBudget(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("upstreams: [{name: a, command: x}]\n"), nil)
	if err != nil || cfg.MaxToolNameLength != 46 || len(cfg.ClientHosts) != 1 || len(cfg.Warnings) != 0 {
		t.Fatalf("defaults: %+v %v; want 46, Claude Code, no warning", cfg, err)
	}
	cfg, err = Parse("c.yaml", []byte("maxToolNameLength: 60\nupstreams: [{name: a, command: x}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`c.yaml:1:20: maxToolNameLength: Claude Code shows tools as "mcp__switchboard__"+name and rejects names over 64 characters, but names may be 60 long (78 with the prefix); lower maxToolNameLength to 46`,
	})
	cfg, err = Parse("c.yaml", []byte("clientHosts:\n  - {name: Cursor, prefix: \"mcp_acme-gateway_\", maxLength: 60}\nupstreams: [{name: a, command: x}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`c.yaml:2:5: clientHosts[0]: Cursor shows tools as "mcp_acme-gateway_"+name and rejects names over 60 characters, but names may be 46 long (63 with the prefix); lower maxToolNameLength to 43`,
	})
	for in, want := range map[string]string{
		"maxToolNameLength: 8\n":          "must be between 12 and 64",
		"maxToolNameLength: 65\n":         "must be between 12 and 64",
		"clientHosts: [{name: x}]\n":      "needs maxLength",
		"clientHosts: {name: x}\n":        "must be a list",
		"clientHosts: [{maxLength: 0}]\n": "at least 1",
	} {
		if _, err := Parse("c.yaml", []byte(in+"upstreams: [{name: a, command: x}]\n"), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want a problem saying %q", in, err, want)
		}
	}
}

// FuzzParse: any file, YAML or JSON, parses or is refused with problems that carry their position; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{fullYAML, "", "upstreams: []\n", `{"mcpServers":{"a":{"command":"x"}}}`, "listen: [\n", "upstreams:\n  - {name: a, url: ${X:-http://h}}\n", catalogYAML,
		"upstreams: [{name: a, command: x}]\nendpoints: [{name: e, include: [\"a__[b-c]*\", \"x://*\"], exclude: [\"\\\\*\"]}]\n",
		"upstreams: [{name: a, command: x}]\noverrides: {a/t: {name: n, arguments: {k: &v [1, {x: *v}]}}, a/prompts/p: {description: d}}\npinning: {onChange: block}\n",
		`{"upstreams": [{"name": "a", "command": "x"}], "endpoints": [{"name": "e", "policy": []}], "overrides": {"a/t": {"annotations": {"readOnlyHint": true}}}}`,
		searchYAML, "discovery: search\nalwaysList: [\"a__*\"]\nsearch: {embeddings: {url: \"http://h/v1\", model: m, apiKeyEnv: \"${K}\"}, timeout: 1s}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, name := range []string{"c.yaml", "c.json"} {
			cfg, err := Parse(name, []byte(in), nil)
			if err == nil {
				if cfg == nil {
					t.Fatalf("Parse(%s) = nil, nil", name)
				}
				continue
			}
			var probs *Problems
			if !errors.As(err, &probs) || len(probs.List) == 0 {
				t.Fatalf("Parse(%s) error %v is not a list of problems", name, err)
			}
		}
	})
}

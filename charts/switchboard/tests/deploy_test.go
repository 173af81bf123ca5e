package charttest

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	Cmd, Args string
	Line      int
}

func parseDockerfile(t *testing.T, file string) []instruction {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args), Line: start})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s ends inside a continued line", file)
	}
	known := []string{"FROM", "ARG", "WORKDIR", "COPY", "RUN", "ENV", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL"}
	for _, in := range out {
		if !slices.Contains(known, in.Cmd) {
			t.Errorf("%s:%d: unexpected instruction %q", file, in.Line, in.Cmd)
		}
	}
	return out
}

// TestDockerfiles lints the images without a Docker engine: multi-stage, static build, non-root final user,
// the entrypoint the chart relies on, and a Go version that matches go.mod.
func TestDockerfiles(t *testing.T) {
	root := repoRoot(t)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVer == nil {
		t.Fatal("no go directive in go.mod")
	}
	entry := `["/switchboard","serve","--config","/etc/switchboard/config.yaml"]`
	for _, tc := range []struct {
		file, base, entrypoint string
		extra                  []string // strings the Dockerfile must contain
	}{
		{"Dockerfile", "gcr.io/distroless/static-debian12:nonroot", entry, nil},
		{"Dockerfile.runtimes", "node:${NODE_VERSION}-bookworm-slim",
			`["/usr/bin/tini","--","/switchboard","serve","--config","/etc/switchboard/config.yaml"]`,
			[]string{"python3", "/uv /uvx", "npm_config_cache=/tmp/", "UV_CACHE_DIR=/tmp/", "useradd --system --uid 65532"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			file := filepath.Join(root, "deploy", tc.file)
			ins := parseDockerfile(t, file)
			text, _ := os.ReadFile(file)
			if !fileExists(file + ".dockerignore") {
				t.Errorf("deploy/%s.dockerignore is missing: the build context would include node_modules and .git", tc.file)
			}
			stages := map[string]bool{}
			var froms []instruction
			var final []instruction // instructions of the last stage
			for _, in := range ins {
				if in.Cmd == "FROM" {
					froms = append(froms, in)
					final = nil
					f := strings.Fields(in.Args)
					if len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
						stages[f[len(f)-1]] = true
					}
				}
				final = append(final, in)
				if in.Cmd == "COPY" {
					if m := regexp.MustCompile(`--from=(\S+)`).FindStringSubmatch(in.Args); m != nil && !stages[m[1]] {
						t.Errorf("%s:%d: COPY --from=%s names no earlier stage", tc.file, in.Line, m[1])
					}
				}
			}
			if len(froms) < 2 {
				t.Fatalf("%s is not multi-stage", tc.file)
			}
			if !strings.Contains(froms[0].Args, "golang:${GO_VERSION}") || !strings.Contains(string(text), "ARG GO_VERSION="+string(goVer[1])) {
				t.Errorf("the build stage must be golang:${GO_VERSION} with ARG GO_VERSION=%s (go.mod's)", goVer[1])
			}
			if got := strings.Fields(froms[len(froms)-1].Args)[0]; got != tc.base {
				t.Errorf("final stage FROM %s, want %s", got, tc.base)
			}
			var build string
			for _, in := range ins {
				if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
					build = in.Args
				}
			}
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/switchboard"} {
				if !strings.Contains(build, want) {
					t.Errorf("the go build step lacks %s: %s", want, build)
				}
			}
			var user, entrypoint string
			var expose []string
			for _, in := range final {
				switch in.Cmd {
				case "USER":
					user = in.Args
				case "ENTRYPOINT":
					entrypoint = strings.ReplaceAll(in.Args, " ", "")
				case "EXPOSE":
					expose = append(expose, strings.Fields(in.Args)...)
				}
			}
			uid, _, _ := strings.Cut(user, ":")
			if user == "" || uid == "0" || uid == "root" || uid != "65532" {
				t.Errorf("final stage USER = %q, want 65532 (non-root, the chart's runAsUser)", user)
			}
			if entrypoint != strings.ReplaceAll(tc.entrypoint, " ", "") {
				t.Errorf("ENTRYPOINT = %s, want %s (the chart appends flags to it)", entrypoint, tc.entrypoint)
			}
			if !slices.Contains(expose, "8080") {
				t.Errorf("EXPOSE %v, want 8080", expose)
			}
			for _, want := range tc.extra {
				if !strings.Contains(string(text), want) {
					t.Errorf("%s lacks %q", tc.file, want)
				}
			}
		})
	}
}

// TestCompose checks deploy/compose.yaml: two non-root, read-only gateway replicas behind nginx hashing on
// Mcp-Session-Id, Redis, ports on loopback only, and a gateway config that `switchboard check` accepts.
func TestCompose(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "deploy")
	b, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]map[string]any `json:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"redis", "gateway-1", "gateway-2", "nginx"} {
		if c.Services[s] == nil {
			t.Fatalf("compose.yaml has no service %s", s)
		}
	}
	for name, s := range c.Services {
		for _, p := range asStrings(s["ports"]) {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %s beyond loopback", name, p)
			}
		}
		for _, v := range asStrings(s["volumes"]) {
			src := strings.Split(v, ":")[0]
			if strings.HasPrefix(src, "./") && !fileExists(filepath.Join(dir, src)) {
				t.Errorf("service %s mounts %s, which does not exist", name, src)
			}
		}
	}
	for _, g := range []string{"gateway-1", "gateway-2"} {
		s := c.Services[g]
		if s["user"] != "65532:65532" || s["read_only"] != true || !slices.Contains(asStrings(s["cap_drop"]), "ALL") {
			t.Errorf("%s must run as 65532, read-only, with capabilities dropped: %v", g, s)
		}
	}
	nginx, err := os.ReadFile(filepath.Join(dir, "compose", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hash $http_mcp_session_id", "server gateway-1:8080", "server gateway-2:8080", "proxy_buffering off"} {
		if !strings.Contains(string(nginx), want) {
			t.Errorf("compose/nginx.conf lacks %q", want)
		}
	}
	cfg := filepath.Join(dir, "compose", "switchboard.yaml")
	text, _ := os.ReadFile(cfg)
	checkConfig(t, cfg, dummyEnv(envRefs(string(text))), asStrings(c.Services["gateway-1"]["command"])...) // serve's flags there
}

func asStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestKustomizeBase checks deploy/kustomize/base against the chart's defaults: the same Deployment, Service and
// ServiceAccount (less Helm's own labels and the checksum annotation) and the same gateway config.
func TestKustomizeBase(t *testing.T) {
	base := filepath.Join(repoRoot(t), "deploy", "kustomize", "base")
	var k struct {
		APIVersion         string   `json:"apiVersion"`
		Kind               string   `json:"kind"`
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Name    string         `json:"name"`
			Files   []string       `json:"files"`
			Options map[string]any `json:"options"`
		} `json:"configMapGenerator"`
		Images []map[string]string `json:"images"`
	}
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	strictDecode(t, b, &k)
	if k.Kind != "Kustomization" || len(k.ConfigMapGenerator) != 1 || k.ConfigMapGenerator[0].Name != "switchboard" {
		t.Fatalf("kustomization.yaml: %+v", k)
	}

	// The chart, rendered as release "switchboard" with the base's issuer and publicURL.
	// Release "switchboard", so the names match the base's.
	out, err := execHelm(t, "template", "switchboard", chartDir(t), "--set", "auth.issuer=https://login.example.com/realms/eng", "--set", "config.publicURL=https://mcp.example.com")
	if err != nil {
		t.Fatal(err)
	}
	chart := parseRendered(t, out)

	for _, res := range k.Resources {
		doc, err := os.ReadFile(filepath.Join(base, res))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		must(t, yaml.Unmarshal(doc, &m))
		kind, _ := m["kind"].(string)
		o := object{Kind: kind, YAML: doc, Map: m}
		o.Name, _ = get(m, "metadata", "name").(string)
		want := chart.one(t, kind, o.Name)
		switch kind {
		case "Deployment":
			var got, exp appsv1.Deployment
			strictDecode(t, doc, &got)
			strictDecode(t, want.YAML, &exp)
			exp.Namespace = "" // the base leaves the namespace to the overlay
			stripHelm(exp.Labels)
			stripHelm(exp.Spec.Template.Labels)
			delete(exp.Spec.Template.Annotations, "checksum/config")
			if len(exp.Spec.Template.Annotations) == 0 {
				exp.Spec.Template.Annotations = nil
			}
			if !reflect.DeepEqual(got, exp) {
				gj, _ := yaml.Marshal(got)
				ej, _ := yaml.Marshal(exp)
				t.Errorf("kustomize base Deployment differs from the chart's defaults.\nbase:\n%s\nchart:\n%s", gj, ej)
			}
		case "Service", "ServiceAccount":
			got, exp := map[string]any{}, map[string]any{}
			must(t, yaml.Unmarshal(doc, &got))
			must(t, yaml.Unmarshal(want.YAML, &exp))
			stripHelmAny(get(exp, "metadata", "labels"))
			delete(exp["metadata"].(map[string]any), "namespace")
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("kustomize base %s differs from the chart's defaults:\nbase: %v\nchart: %v", kind, got, exp)
			}
		default:
			t.Errorf("unexpected resource %s in the base", res)
		}
	}

	var cm corev1.ConfigMap
	strictDecode(t, chart.one(t, "ConfigMap", "switchboard").YAML, &cm)
	var chartCfg, baseCfg map[string]any
	must(t, yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &chartCfg))
	cfgFile := filepath.Join(base, k.ConfigMapGenerator[0].Files[0])
	cfgText, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	must(t, yaml.Unmarshal(cfgText, &baseCfg))
	if !reflect.DeepEqual(chartCfg, baseCfg) {
		t.Errorf("kustomize base config.yaml differs from the chart's:\nbase: %v\nchart: %v", baseCfg, chartCfg)
	}
	checkConfig(t, cfgFile, nil)
}

func stripHelm(l map[string]string) {
	for _, k := range []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"} {
		delete(l, k)
	}
}

func stripHelmAny(v any) {
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"} {
			delete(m, k)
		}
	}
}

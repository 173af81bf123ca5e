package charttest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const issuer = "auth.issuer=https://login.example.com/realms/eng,auth.audience=https://mcp.example.com/mcp"

// TestRejected: values.schema.json and the chart's own checks refuse what would deploy a broken or unsafe
// gateway, with a message that says what to do.
func TestRejected(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // regexp the error must match
	}{
		{"typo at the top", []string{"--set", issuer, "--set", "replicaCont=2"}, `additional propert.*replicaCont`},
		{"typo deep down", []string{"--set", issuer, "--set", "config.log.levle=debug"}, `additional propert.*levle`},
		{"ill-typed", []string{"--set", issuer, "--set-string", "replicaCount=two"}, `replicaCount.*(integer|type)`},
		{"bad enum", []string{"--set", issuer, "--set", "config.log.level=verbose"}, `level`},
		{"bad duration", []string{"--set", issuer, "--set", "config.requestTimeout=60"}, `requestTimeout`},
		{"unknown upstream key", []string{"--set", issuer, "--set", "upstreams[0].name=a", "--set", "upstreams[0].url=https://a.example.com/mcp", "--set", "upstreams[0].timout=1m"}, `timout`},
		{"upstream with command and url", []string{"--set", issuer, "--set", "upstreams[0].name=a", "--set", "upstreams[0].url=https://a.example.com/mcp", "--set", "upstreams[0].command=npx"}, `oneOf|upstreams`},
		{"upstream name", []string{"--set", issuer, "--set", "upstreams[0].name=Files", "--set", "upstreams[0].url=https://a.example.com/mcp"}, `name`},
		{"no issuer", nil, `auth.issuer is required`},
		{"issuer without audience or publicURL", []string{"--set", "auth.issuer=https://login.example.com/realms/eng"}, `auth: needs audience .*or publicURL`},
		{"replicas without redis", []string{"--set", issuer, "--set", "replicaCount=2", "--set", "cursorSecret.existingSecret=c"}, `needs shared session state`},
		{"replicas without cursor key", []string{"--set", issuer, "--set", "replicaCount=2", "--set", "redis.url=redis://r:6379"}, `cursor signing key`},
		{"autoscaling without redis", []string{"--set", issuer, "--set", "autoscaling.enabled=true"}, `needs shared session state`},
		{"policy without auth", []string{"--set", "auth.enabled=false", "--set", "policy[0].allow[0]=x"}, `policy needs auth`},
		{"endpoint policy without auth", []string{"--set", "auth.enabled=false", "--set", "endpoints[0].name=a", "--set", "endpoints[0].policy[0].allow[0]=x"}, `a's policy needs auth`},
		{"reserved endpoint name", []string{"--set", issuer, "--set", "endpoints[0].name=sse"}, `endpoints.*name`},
		{"unknown override key", []string{"--set", issuer, "--set", "overrides.a/t.nme=x"}, `nme`},
		{"bad pinning action", []string{"--set", issuer, "--set", "pinning.onChange=deny"}, `onChange`},
		{"unset secret reference", []string{"--set", issuer, "--set", "upstreams[0].name=a", "--set", "upstreams[0].url=https://a.example.com/mcp", "--set", "upstreams[0].headers.X-Key=${A_KEY}"}, `references \$\{A_KEY\}.*secretEnv`},
		{"introspection without secret", []string{"--set", issuer, "--set", "auth.introspection.enabled=true", "--set", "auth.introspection.url=https://l.example.com/i", "--set", "auth.introspection.clientId=c"}, `existingSecret is required`},
		{"both redis kinds", []string{"--set", issuer, "--set", "redis.enabled=true", "--set", "redis.url=redis://r:6379"}, `not both`},
		{"goMaxProcs zero", []string{"--set", issuer, "--set", "goMaxProcs=0"}, `goMaxProcs`},
		{"goMaxProcs unknown word", []string{"--set", issuer, "--set", "goMaxProcs=auto"}, `goMaxProcs`},
		{"goMaxProcs too large", []string{"--set", issuer, "--set", "goMaxProcs=5000"}, `goMaxProcs`},
		{"goMaxProcs leading zero", []string{"--set", issuer, "--set-string", "goMaxProcs=02"}, `goMaxProcs`},
		{"goMaxProcs requests without a CPU request", []string{"--set", issuer, "--set", "goMaxProcs=requests", "--set", "resources.requests.cpu=null"}, `goMaxProcs: requests needs resources.requests.cpu`},
		{"httproute without parent", []string{"--set", issuer, "--set", "httpRoute.enabled=true"}, `parentRefs is required`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := helmTemplate(t, c.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded; it must fail", c.args)
			}
			if !regexp.MustCompile(c.want).MatchString(err.Error()) {
				t.Errorf("error does not match %q:\n%v", c.want, err)
			}
		})
	}
}

// TestDefaults: the defaults plus an issuer render, and a secret defined under secretEnv satisfies a reference.
func TestDefaults(t *testing.T) {
	out, err := helmTemplate(t, "--set", issuer)
	if err != nil {
		t.Fatal(err)
	}
	r := parseRendered(t, out)
	want := []string{"ConfigMap/" + fullname, "Deployment/" + fullname, "Service/" + fullname, "ServiceAccount/" + fullname}
	if got := r.kinds(); got != strings.Join(want, ", ") {
		t.Errorf("defaults render %s, want %s", got, strings.Join(want, ", "))
	}
	if _, err := helmTemplate(t, "--set", issuer, "--set", "upstreams[0].name=a", "--set", "upstreams[0].url=https://a.example.com/mcp",
		"--set", "upstreams[0].headers.X-Key=${A_KEY}", "--set", "secretEnv.A_KEY.secretName=s", "--set", "secretEnv.A_KEY.key=k"); err != nil {
		t.Errorf("a reference defined under secretEnv must render: %v", err)
	}
}

// TestChecksum: the pod template's checksum/config changes with the config and only with it.
func TestChecksum(t *testing.T) {
	sum := func(args ...string) string {
		out, err := helmTemplate(t, append([]string{"--set", issuer}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`checksum/config: ([0-9a-f]{64})`).FindStringSubmatch(out)
		if m == nil {
			t.Fatal("no checksum/config annotation")
		}
		return m[1]
	}
	base := sum()
	if sum("--set", "config.pageSize=50") == base {
		t.Error("changing config.pageSize did not change checksum/config: the pods would not roll")
	}
	if sum("--set", "upstreams[0].name=a", "--set", "upstreams[0].url=https://a.example.com/mcp") == base {
		t.Error("adding an upstream did not change checksum/config")
	}
	if sum("--set", "podAnnotations.x=y", "--set", "resources.limits.memory=1Gi") != base {
		t.Error("a change outside the config changed checksum/config")
	}
}

// TestNotes: NOTES.txt tells how to connect, and warns loudly when authentication is off. helm template does not
// render NOTES.txt (and helm install needs a cluster), so a copy of the chart renders it into a ConfigMap.
func TestNotes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "switchboard")
	if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(filepath.Join(dir, "templates", "NOTES.txt")))
	must(t, os.WriteFile(filepath.Join(dir, "templates", "_zz_notes.tpl"),
		[]byte("{{- define \"test.notes\" -}}\n"+string(notes)+"{{- end -}}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "templates", "zz-notes.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ include \"test.notes\" . | toJson }}\n"), 0o644))
	render := func(args ...string) string {
		full := append([]string{"template", release, dir, "--namespace", namespace, "--show-only", "templates/zz-notes.yaml"}, args...)
		out, err := execHelm(t, full...)
		if err != nil {
			t.Fatal(err)
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data["notes"]
	}
	n := render("--set", "auth.enabled=false", "--set", "admin.enabled=true")
	for _, want := range []string{"AUTHENTICATION IS OFF", "kubectl -n mcp port-forward service/sb-switchboard 8080:8080",
		"http://127.0.0.1:8080/mcp", "port-forward deployment/sb-switchboard 9090:9090"} {
		if !strings.Contains(n, want) {
			t.Errorf("NOTES with auth off lack %q:\n%s", want, n)
		}
	}
	n = render("-f", filepath.Join(chartDir(t), "ci", "ingress-values.yaml"))
	if strings.Contains(n, "AUTHENTICATION IS OFF") || !strings.Contains(n, "https://mcp.example.com/mcp") {
		t.Errorf("NOTES with an ingress must give its URL and no warning:\n%s", n)
	}
	t.Logf("NOTES.txt with an ingress:\n%s", n)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestValuesTable: every top-level value is documented in the chart README's table.
func TestValuesTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(chartDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	v := values(t, filepath.Join(chartDir(t), "values.yaml"))
	var missing []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, val := range m {
			key := prefix + k
			sub, isMap := val.(map[string]any)
			if isMap && len(sub) > 0 && !strings.Contains(string(readme), "| `"+key+"` |") {
				walk(key+".", sub)
				continue
			}
			if !strings.Contains(string(readme), "| `"+key+"` |") {
				missing = append(missing, key)
			}
		}
	}
	walk("", v)
	if len(missing) > 0 {
		t.Errorf("charts/switchboard/README.md has no row for: %s", strings.Join(missing, ", "))
	}
}

// TestGoMaxProcs: goMaxProcs renders GOMAXPROCS as a plain whole number however it is given (a number from a values
// file is a float64, printed in digits), or from the CPU request, which Kubernetes takes from the limit when only a
// limit is set.
func TestGoMaxProcs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte("goMaxProcs: 4000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		value string // "" for the CPU request
	}{
		{"number from --set", []string{"--set", "goMaxProcs=3"}, "3"},
		{"string of digits", []string{"--set-string", "goMaxProcs=7"}, "7"},
		{"large number from a values file", []string{"-f", file}, "4000"},
		{"requests", []string{"--set", "goMaxProcs=requests"}, ""},
		{"requests with only a CPU limit", []string{"--set", "goMaxProcs=requests", "--set", "resources.requests.cpu=null", "--set", "resources.limits.cpu=2"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplate(t, append([]string{"--set", issuer}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var dep appsv1.Deployment
			strictDecode(t, parseRendered(t, out).one(t, "Deployment", fullname).YAML, &dep)
			var got *corev1.EnvVar
			for i, e := range dep.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "GOMAXPROCS" {
					got = &dep.Spec.Template.Spec.Containers[0].Env[i]
				}
			}
			switch {
			case got == nil:
				t.Fatal("no GOMAXPROCS")
			case tc.value != "" && (got.Value != tc.value || got.ValueFrom != nil):
				t.Errorf("GOMAXPROCS = %+v, want %q", got, tc.value)
			case tc.value == "" && (got.ValueFrom == nil || got.ValueFrom.ResourceFieldRef == nil || got.ValueFrom.ResourceFieldRef.Resource != "requests.cpu"):
				t.Errorf("GOMAXPROCS = %+v, want the CPU request", got)
			}
		})
	}
}

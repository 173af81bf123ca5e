// Package charttest renders the Switchboard Helm chart with bin/helm and checks what comes out: every object
// strictly decoded into its Kubernetes type, the security settings, and the rendered gateway config validated
// by `switchboard check`. It is its own Go module so the repository's `go test ./...` does not need Kubernetes
// packages. Run it with .ci/chart, or: cd charts/switchboard/tests && go test ./...
package charttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const (
	release   = "sb"
	namespace = "mcp"
	fullname  = "sb-switchboard"
)

// repoRoot is the repository root: this file is in charts/switchboard/tests.
func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find the test's own file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", "switchboard") }

// helmBin is $HELM, or bin/helm as .ci/setup installs it, or helm on the PATH.
func helmBin(t testing.TB) string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if p := filepath.Join(repoRoot(t), "bin", "helm"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Fatal("helm not found: run .ci/setup (installs bin/helm) or set HELM")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// helmTemplate runs `helm template sb charts/switchboard --namespace mcp ARGS...` and returns stdout, or the
// error with stderr.
func helmTemplate(t testing.TB, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"template", release, chartDir(t), "--namespace", namespace}, args...)
	cmd := exec.Command(helmBin(t), full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(full, " "), err, errb.String())
	}
	return out.String(), nil
}

// object is one rendered document: its kind, name, the raw YAML and the generic form.
type object struct {
	Kind, APIVersion, Name string
	YAML                   []byte
	Map                    map[string]any
}

// rendered is everything one helm template produced.
type rendered struct {
	Objects []object
	Notes   string
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func parseRendered(t testing.TB, out string) rendered {
	t.Helper()
	var r rendered
	for _, doc := range docSep.Split(out, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		meta, _ := m["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		kind, _ := m["kind"].(string)
		av, _ := m["apiVersion"].(string)
		if kind == "" || av == "" || name == "" {
			t.Fatalf("rendered document without kind, apiVersion or metadata.name:\n%s", doc)
		}
		r.Objects = append(r.Objects, object{Kind: kind, APIVersion: av, Name: name, YAML: []byte(doc), Map: m})
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// find returns the objects of a kind.
func (r rendered) find(kind string) []object {
	var out []object
	for _, o := range r.Objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r rendered) one(t testing.TB, kind, name string) object {
	t.Helper()
	for _, o := range r.Objects {
		if o.Kind == kind && o.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %q rendered; have %s", kind, name, r.kinds())
	return object{}
}

func (r rendered) kinds() string {
	var ks []string
	for _, o := range r.Objects {
		ks = append(ks, o.Kind+"/"+o.Name)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// strictDecode decodes a YAML document into out, rejecting any field the Go type does not have: a misspelt or
// misplaced key in a template fails here, as `kubectl apply --validate=strict` would fail it.
func strictDecode(t testing.TB, doc []byte, out any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("YAML to JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("strict decode into %T: %v\n%s", out, err, doc)
	}
}

// typed is the k8s.io/api type of each kind the chart renders; ServiceMonitor and HTTPRoute have none there and
// are checked structurally.
var typed = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1/ServiceMonitor": nil,
	"gateway.networking.k8s.io/v1/HTTPRoute":  nil,
}

// checkMeta checks what every object needs: a valid name, the namespace, valid labels including the standard ones.
func checkMeta(t testing.TB, o object, wantNamespace bool) {
	t.Helper()
	meta, _ := o.Map["metadata"].(map[string]any)
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		t.Errorf("%s %q: invalid name: %v", o.Kind, o.Name, errs)
	}
	if wantNamespace && meta["namespace"] != namespace {
		t.Errorf("%s %q: metadata.namespace = %v, want %q", o.Kind, o.Name, meta["namespace"], namespace)
	}
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("%s %q: label key %q: %v", o.Kind, o.Name, k, errs)
		}
		s, _ := v.(string)
		if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
			t.Errorf("%s %q: label %s=%v: %v", o.Kind, o.Name, k, v, errs)
		}
	}
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
		"app.kubernetes.io/version", "app.kubernetes.io/component", "helm.sh/chart"} {
		if _, ok := labels[k]; !ok {
			t.Errorf("%s %q: label %s missing", o.Kind, o.Name, k)
		}
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// switchboardBin builds the gateway from the repository root (once per test run), or uses $SWITCHBOARD_BIN.
func switchboardBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SWITCHBOARD_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-chart-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/switchboard")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/switchboard: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

var problemLine = regexp.MustCompile(`^.*?:\d+:\d+: (\S+): (.*)$`)

// checkConfig runs `switchboard check --config` on a config file with env set and args, the flags serve runs with
// (check refuses what serve would refuse with them), and fails if the binary rejects it: the chart must never
// render a config the pod would crash-loop on.
func checkConfig(t *testing.T, file string, env map[string]string, args ...string) {
	t.Helper()
	cmd := exec.Command(switchboardBin(t), append([]string{"check", "--config", file}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Logf("switchboard check: %s", firstLine(string(out)))
		return
	}
	t.Fatalf("switchboard check --config %s: %v\n%s", file, err, out)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// envRefs returns the names of the ${VAR} / ${env:VAR} references without a default in a config text.
var envRefRE = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

func envRefs(text string) []string {
	text = strings.ReplaceAll(text, "$$", "")
	seen := map[string]bool{}
	var out []string
	for _, m := range envRefRE.FindAllStringSubmatch(text, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// dummyEnv gives every referenced variable a value long enough for cursorSecret (>= 32 bytes).
func dummyEnv(names []string) map[string]string {
	env := map[string]string{}
	for _, n := range names {
		env[n] = "test-value-" + strings.Repeat("x", 32)
	}
	return env
}

var flagLine = regexp.MustCompile(`(?m)^\s+-{1,2}([a-z0-9-]+)`)

// serveFlags returns the flags `switchboard serve -h` lists.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := exec.Command(switchboardBin(t), "serve", "-h").CombinedOutput() // -h exits non-zero
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["config"] {
		t.Fatalf("`switchboard serve -h` lists no --config flag; output:\n%s", out)
	}
	return flags
}

// execHelm runs helm with args and returns stdout.
func execHelm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

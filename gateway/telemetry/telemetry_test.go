package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestServiceNameFromEnvironment: OTEL_SERVICE_NAME (and service.name in OTEL_RESOURCE_ATTRIBUTES) names the
// service, as in every OpenTelemetry SDK, so that several gateways can be told apart in one tracing backend; the
// built-in name is only the default. It runs first: the SDK reads the environment into its default resource
// once per process.
func TestServiceNameFromEnvironment(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "switchboard-eu1")
	exp := tracetest.NewInMemoryExporter()
	p, err := New(context.Background(), Options{ServiceName: "switchboard", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	_, span := p.Tracer.Tracer("test").Start(context.Background(), "op")
	span.End()
	var svc string
	for _, kv := range exp.GetSpans()[0].Resource.Attributes() {
		if kv.Key == "service.name" {
			svc = kv.Value.AsString()
		}
	}
	if svc != "switchboard-eu1" {
		t.Errorf("service.name = %q with OTEL_SERVICE_NAME=switchboard-eu1; the environment must win over the built-in default", svc)
	}
}

func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
}

// TestTracerChoice: spans go to the exporter a test hands in; with no exporter they are recorded only when the
// standard OTEL_* environment asks for OTLP, and OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn that off.
func TestTracerChoice(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    map[string]string
		traced bool
	}{
		{"no environment", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, true},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			p, err := New(context.Background(), Options{ServiceName: "switchboard"})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background()) // nothing was recorded, so nothing is sent
			_, isSDK := p.Tracer.(*sdktrace.TracerProvider)
			_, isNoop := p.Tracer.(noop.TracerProvider)
			if c.traced && !isSDK || !c.traced && !isNoop {
				t.Errorf("Tracer is %T, want traced=%v", p.Tracer, c.traced)
			}
		})
	}
}

// TestSpanExporterGetsSpans: with an exporter handed in, every ended span reaches it at once (synchronously), with
// the service name on the resource.
func TestSpanExporterGetsSpans(t *testing.T) {
	clearOTELEnv(t)
	exp := tracetest.NewInMemoryExporter()
	p, err := New(context.Background(), Options{ServiceName: "switchboard", ServiceVersion: "1.2.3", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer.Tracer("test").Start(context.Background(), "op")
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "op" {
		t.Fatalf("exported %v, want the one span", spans)
	}
	var svc string
	for _, kv := range spans[0].Resource.Attributes() {
		if kv.Key == "service.name" {
			svc = kv.Value.AsString()
		}
	}
	if svc != "switchboard" {
		t.Errorf("service.name = %q, want switchboard", svc)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestMetricsHandler: the Prometheus handler serves the OpenTelemetry instruments under Prometheus names (dots to
// underscores, unit and _total suffixes, no scope labels), plus the Go and process collectors.
func TestMetricsHandler(t *testing.T) {
	clearOTELEnv(t)
	p, err := New(context.Background(), Options{ServiceName: "switchboard"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	m := p.Meter.Meter("test")
	c, _ := m.Int64Counter("switchboard.test.things")
	c.Add(context.Background(), 2, metric.WithAttributes(attribute.String("kind", "a")))
	h, _ := m.Float64Histogram("switchboard.test.duration", metric.WithUnit("s"))
	h.Record(context.Background(), 0.5)

	ts := httptest.NewServer(p.Metrics)
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for _, want := range []string{
		`switchboard_test_things_total{kind="a"} 2`,
		"switchboard_test_duration_seconds_bucket{",
		"switchboard_test_duration_seconds_count 1",
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "otel_scope_name") {
		t.Errorf("/metrics carries scope labels; the exporter was built WithoutScopeInfo")
	}
}

// TestGrafanaDashboard: deploy/grafana/switchboard-dashboard.json is a valid Grafana dashboard (schemaVersion 36 or
// later) with a Prometheus datasource variable that every panel uses, and its queries only name metrics the
// gateway exports, the MCP semantic conventions' among them.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "switchboard-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title      string `json:"title"`
			Type       string `json:"type"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if d.SchemaVersion < 36 || d.Title == "" || d.UID == "" {
		t.Errorf("schemaVersion %d, title %q, uid %q: want schemaVersion >= 36 and a title and uid", d.SchemaVersion, d.Title, d.UID)
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		t.Fatal("no Prometheus datasource variable in templating")
	}
	exported := []string{
		"switchboard_requests_total", "switchboard_upstream_inflight", "switchboard_sessions",
		"switchboard_upstream_up", "switchboard_upstream_restarts_total", "switchboard_upstream_instances",
		"switchboard_stream_dropped_total", "switchboard_auth_failures_total",
		"mcp_server_operation_duration_seconds_bucket", "mcp_server_operation_duration_seconds_count",
		"mcp_client_operation_duration_seconds_bucket", "mcp_client_operation_duration_seconds_count",
		"mcp_server_session_duration_seconds_bucket", "mcp_server_session_duration_seconds_count",
		"mcp_client_session_duration_seconds_bucket", "mcp_client_session_duration_seconds_count",
	}
	// Metric names, once label matchers and grouping clauses (whose label names, switchboard_upstream among them,
	// look alike) are cut out.
	labelsRE := regexp.MustCompile(`\{[^}]*\}|\b(?:by|without)\s*\([^)]*\)`)
	metricRE := regexp.MustCompile(`\b(?:switchboard|mcp)_[a-z_]+`)
	var used []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${"+dsVar+"}" {
			t.Errorf("panel %q uses datasource %+v, want ${%s}", p.Title, p.Datasource, dsVar)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metricRE.FindAllString(labelsRE.ReplaceAllString(tg.Expr, " "), -1) {
				if !slices.Contains(exported, name) {
					t.Errorf("panel %q queries %s, which the gateway does not export", p.Title, name)
				}
				used = append(used, name)
			}
		}
	}
	for _, want := range []string{"switchboard_requests_total", "mcp_server_operation_duration_seconds_bucket",
		"mcp_client_operation_duration_seconds_bucket", "mcp_client_operation_duration_seconds_count",
		"mcp_server_session_duration_seconds_bucket", "mcp_client_session_duration_seconds_count",
		"switchboard_upstream_inflight", "switchboard_sessions", "switchboard_upstream_up",
		"switchboard_upstream_restarts_total", "switchboard_stream_dropped_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("no panel shows %s", want)
		}
	}
}

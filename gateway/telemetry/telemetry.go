// Package telemetry sets up Switchboard's OpenTelemetry providers: traces exported over OTLP when the standard
// OTEL_* environment asks for it, and metrics served in Prometheus format at /metrics through the OpenTelemetry
// Prometheus exporter. Nothing is global: the providers are handed to the parts that record.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboard-mcp/switchboard/routing/meter"
)

// Providers are the telemetry providers of one gateway process.
type Providers struct {
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
	// Metrics serves the Prometheus exposition of every metric.
	Metrics http.Handler

	shutdown []func(context.Context) error
}

// Options configure New.
type Options struct {
	ServiceName    string
	ServiceVersion string
	// SpanExporter, when set, receives every span (tests use an in-memory exporter). Otherwise spans are
	// exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
	// (and OTEL_TRACES_EXPORTER is not "none"), and not recorded at all when not.
	SpanExporter sdktrace.SpanExporter
}

// New builds the providers.
func New(ctx context.Context, o Options) (*Providers, error) {
	// The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) comes last, so an operator's name wins.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.ServiceVersion)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	p := &Providers{Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}

	exp := o.SpanExporter
	if exp == nil && otlpConfigured() {
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
	}
	if exp != nil {
		processing := sdktrace.WithBatcher(exp)
		if o.SpanExporter != nil {
			processing = sdktrace.WithSyncer(exp) // a caller's exporter (tests) sees spans at once
		}
		tp := sdktrace.NewTracerProvider(processing, sdktrace.WithResource(res))
		p.Tracer = tp
		p.shutdown = append(p.shutdown, tp.Shutdown)
	} else {
		p.Tracer = noop.NewTracerProvider()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The per-call metrics are aggregated by package meter and read by the exporter from its Set; the rest are
	// the SDK's instruments.
	set := meter.NewSet()
	pe, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithProducer(set))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(pe), sdkmetric.WithResource(res))
	p.Meter = set.Provider(mp)
	p.shutdown = append(p.shutdown, mp.Shutdown)
	p.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return p, nil
}

// otlpConfigured reports whether the standard environment asks for OTLP trace export.
func otlpConfigured() bool {
	if os.Getenv("OTEL_TRACES_EXPORTER") == "none" || os.Getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Shutdown flushes and stops the providers.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range p.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

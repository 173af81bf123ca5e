// Package meter aggregates the per-call metrics of the gateway in process, with atomic counters per attribute
// set, and hands them to OpenTelemetry readers as a metric.Producer: operators see the same metric names,
// attributes and buckets as from the SDK's own instruments, and a measurement costs a map read and a few atomic
// adds instead of the SDK's attribute-set lookup (its reflect-built equivalence key) per Record.
//
// A Set collects the instruments; Set.Provider wraps the meter provider whose readers were given the Set as a
// producer, so that the parts that record find it. Given any other provider (a test's, a noop), the instruments
// record through the provider's own instruments instead, with attribute sets cached by key (routing/attrset).
package meter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/switchboard-mcp/switchboard/routing/attrset"
)

// Set is a group of instruments aggregated in process. It is a metric.Producer: give it to a reader
// (sdkmetric.WithProducer, or the Prometheus exporter's WithProducer) and wrap the provider of that reader with
// Provider. Its zero value is not ready: use NewSet.
type Set struct {
	mu     sync.Mutex
	insts  []instrument // in the order they were made: the order they are produced in
	byName map[string]instrument
}

var _ sdkmetric.Producer = (*Set)(nil)

// instrument is one metric of a Set.
type instrument interface {
	scope() string
	// collect returns the metric with a point per attribute set measured so far; ok is false before any.
	collect(now time.Time) (m metricdata.Metrics, ok bool)
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{byName: map[string]instrument{}} }

// Produce returns every instrument's cumulative aggregation, grouped by instrumentation scope.
func (s *Set) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	s.mu.Lock()
	insts := append([]instrument(nil), s.insts...)
	s.mu.Unlock()
	now := time.Now()
	var out []metricdata.ScopeMetrics
	for _, in := range insts {
		m, ok := in.collect(now)
		if !ok {
			continue
		}
		i := 0
		for i < len(out) && out[i].Scope.Name != in.scope() {
			i++
		}
		if i == len(out) {
			out = append(out, metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: in.scope()}})
		}
		out[i].Metrics = append(out[i].Metrics, m)
	}
	return out, nil
}

// register adds the instrument made by mk under its scope and name, or returns the one already there: like the
// SDK's, instruments are identified by scope and name, so that a router remade by a reload records into the same
// aggregation as its predecessor.
func register[I instrument](s *Set, scope, name string, mk func() I) (I, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := scope + "\x00" + name
	if in, ok := s.byName[key]; ok {
		same, ok := in.(I)
		if !ok {
			return same, fmt.Errorf("metric %s of %s made twice with different kinds or attribute keys", name, scope)
		}
		return same, nil
	}
	in := mk()
	s.byName[key] = in
	s.insts = append(s.insts, in)
	return in, nil
}

// Provider is a meter provider whose readers produce a Set too: the instruments of this package made with it
// aggregate into the Set; everything else goes to the wrapped provider.
type Provider struct {
	metric.MeterProvider
	set *Set
}

// Provider wraps mp, whose readers were given s as a producer.
func (s *Set) Provider(mp metric.MeterProvider) *Provider {
	return &Provider{MeterProvider: mp, set: s}
}

// Desc describes an instrument as OpenTelemetry names it.
type Desc struct {
	Scope       string // the instrumentation scope (the package that records)
	Name        string
	Unit        string
	Description string
}

// table maps keys to their series. Readers take no lock: the map is replaced, never changed, when a key is added
// (rare: the keys are bounded, and each is added once).
type table[K comparable, V any] struct {
	m        atomic.Pointer[map[K]*V]
	mu       sync.Mutex // serialises additions
	overflow atomic.Pointer[V]
}

// overflowAttrs mark the series that takes measurements beyond attrset.MaxSets distinct sets, as the SDK's
// cardinality limit does.
var overflowAttrs = []attribute.KeyValue{attribute.Bool("otel.metric.overflow", true)}

// get returns k's series, made with mk(its attributes) on first use.
func (t *table[K, V]) get(k K, attrs func() []attribute.KeyValue, mk func([]attribute.KeyValue) *V) *V {
	if m := t.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	var n int
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
		n = len(*old)
	}
	if n >= attrset.MaxSets {
		v := t.overflow.Load()
		if v == nil {
			v = mk(overflowAttrs)
			t.overflow.Store(v)
		}
		return v
	}
	next := make(map[K]*V, n+1)
	if old != nil {
		for key, v := range *old {
			next[key] = v
		}
	}
	v := mk(attrs())
	next[k] = v
	t.m.Store(&next)
	return v
}

// each calls f with every series, the overflow last.
func (t *table[K, V]) each(f func(*V)) {
	if m := t.m.Load(); m != nil {
		for _, v := range *m {
			f(v)
		}
	}
	if v := t.overflow.Load(); v != nil {
		f(v)
	}
}

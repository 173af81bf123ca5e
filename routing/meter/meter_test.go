package meter_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/switchboard-mcp/switchboard/routing/attrset"
	"github.com/switchboard-mcp/switchboard/routing/meter"
)

// key is a test attribute set of the shape of routing's: method, upstream, tool, outcome.
type key struct {
	method, upstream, tool, errType string
}

func (k key) Attrs() []attribute.KeyValue {
	a := []attribute.KeyValue{attribute.String("mcp.method.name", k.method), attribute.String("switchboard.upstream", k.upstream)}
	if k.tool != "" {
		a = append(a, attribute.String("gen_ai.tool.name", k.tool))
	}
	if k.errType != "" {
		a = append(a, attribute.String("error.type", k.errType))
	}
	return a
}

var (
	buckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	opDesc  = meter.Desc{Scope: "test/routing", Name: "mcp.client.operation.duration", Unit: "s", Description: "calls"}
	cntDesc = meter.Desc{Scope: "test/gateway", Name: "switchboard.requests", Description: "requests"}
)

// providers are the two ways of recording: a plain SDK provider (the instruments' fallback, and what recording
// was before this package) and one wrapped with a Set.
type providers struct {
	sdk, set         metric.MeterProvider
	sdkRead, setRead *sdkmetric.ManualReader
}

func newProviders(t testing.TB) providers {
	var p providers
	p.sdkRead = sdkmetric.NewManualReader()
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.sdkRead))
	set := meter.NewSet()
	p.setRead = sdkmetric.NewManualReader(sdkmetric.WithProducer(set))
	setMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.setRead))
	t.Cleanup(func() { _ = sdkMP.Shutdown(context.Background()); _ = setMP.Shutdown(context.Background()) })
	p.sdk, p.set = sdkMP, set.Provider(setMP)
	return p
}

// point is a data point reduced to what both ways must agree on.
type point struct {
	scope, name, unit, desc string
	attrs                   string
	count                   uint64
	buckets                 string
	sum, min, max           float64
	value                   int64
}

func collect(t *testing.T, r *sdkmetric.ManualReader) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			base := point{scope: sm.Scope.Name, name: m.Name, unit: m.Unit, desc: m.Description}
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				if d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: temporality %v", m.Name, d.Temporality)
				}
				for _, dp := range d.DataPoints {
					p := base
					p.attrs, p.count, p.buckets = dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Count, fmt.Sprint(dp.Bounds, dp.BucketCounts)
					mn, _ := dp.Min.Value()
					mx, _ := dp.Max.Value()
					p.sum, p.min, p.max = round(dp.Sum), round(mn), round(mx)
					out = append(out, p)
				}
			case metricdata.Sum[int64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic %v, temporality %v", m.Name, d.IsMonotonic, d.Temporality)
				}
				for _, dp := range d.DataPoints {
					p := base
					p.attrs, p.value = dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value
					out = append(out, p)
				}
			default:
				t.Errorf("%s: %T", m.Name, m.Data)
			}
		}
	}
	slices.SortFunc(out, func(a, b point) int { return cmpStr(a.name+a.attrs, b.name+b.attrs) })
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// round drops what float sums of seconds and integer sums of nanoseconds may differ by.
func round(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// TestSameAsSDK: the same measurements recorded through a Set and through the SDK's instruments give the same
// metrics: scope, name, unit, description, attribute sets, counts, buckets (values on a boundary included),
// sum, min and max; and counters alike.
func TestSameAsSDK(t *testing.T) {
	p := newProviders(t)
	type rec struct {
		k key
		d time.Duration
	}
	recs := []rec{
		{key{"tools/call", "web", "web__echo", ""}, 3 * time.Millisecond},
		{key{"tools/call", "web", "web__echo", ""}, 10 * time.Millisecond}, // on a boundary: the lower bucket
		{key{"tools/call", "web", "web__echo", ""}, 10*time.Millisecond + 1},
		{key{"tools/call", "web", "web__echo", ""}, 7 * time.Minute}, // past the last bound
		{key{"tools/call", "web", "web__fail", "-32603"}, 250 * time.Millisecond},
		{key{"resources/read", "files", "", ""}, 0},
		{key{"resources/read", "files", "", "timeout"}, time.Minute},
	}
	for _, mp := range []metric.MeterProvider{p.sdk, p.set} {
		h, err := meter.NewHistogram[key](mp, opDesc, buckets)
		if err != nil {
			t.Fatal(err)
		}
		c, err := meter.NewCounter[key](mp, cntDesc)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			h.Record(r.k, r.d)
			c.Add(r.k, 2)
		}
	}
	want, got := collect(t, p.sdkRead), collect(t, p.setRead)
	if len(want) != 8 {
		t.Fatalf("the SDK gave %d points, want 8: %v", len(want), want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("through a Set:\n%v\nthrough the SDK:\n%v", got, want)
	}
}

// TestSameInstrument: making an instrument again (a reload's new router) records into the same aggregation, and
// one made again as another kind is an error.
func TestSameInstrument(t *testing.T) {
	p := newProviders(t)
	h1, _ := meter.NewHistogram[key](p.set, opDesc, buckets)
	h2, err := meter.NewHistogram[key](p.set, opDesc, buckets)
	if err != nil || h1 != h2 {
		t.Fatalf("made again: %p, %p, %v", h1, h2, err)
	}
	if _, err := meter.NewCounter[key](p.set, opDesc); err == nil {
		t.Error("a counter with a histogram's name: no error")
	}
}

// TestConcurrentRecords: measurements racing each other and collections are all counted (run with -race).
func TestConcurrentRecords(t *testing.T) {
	p := newProviders(t)
	h, _ := meter.NewHistogram[key](p.set, opDesc, buckets)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				h.Record(key{"tools/call", "web", fmt.Sprint("t", i%3), ""}, time.Duration(w*i)*time.Microsecond)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			collect(t, p.setRead)
		}
	})
	wg.Wait()
	var total uint64
	for _, pt := range collect(t, p.setRead) {
		total += pt.count
	}
	if total != workers*each {
		t.Errorf("%d measurements counted, want %d", total, workers*each)
	}
}

// TestOverflow: past attrset.MaxSets distinct attribute sets, measurements go to one series marked
// otel.metric.overflow, as the SDK's cardinality limit does.
func TestOverflow(t *testing.T) {
	p := newProviders(t)
	c, _ := meter.NewCounter[key](p.set, cntDesc)
	for i := range attrset.MaxSets + 10 {
		c.Add(key{method: "tools/call", upstream: fmt.Sprint(i)}, 1)
	}
	pts := collect(t, p.setRead)
	if len(pts) != attrset.MaxSets+1 {
		t.Fatalf("%d series, want %d", len(pts), attrset.MaxSets+1)
	}
	i := slices.IndexFunc(pts, func(p point) bool { return p.attrs == "otel.metric.overflow=true" })
	if i < 0 || pts[i].value != 10 {
		t.Errorf("no overflow series counting 10: %v", i)
	}
}

// BenchmarkRecord is the cost of one call's measurement, as the router makes it: through the SDK's histogram
// with a cached attribute set (how every call was recorded before this package), and through a Set; serially
// and from every core at once. A reader is attached, as in production.
func BenchmarkRecord(b *testing.B) {
	p := newProviders(b)
	k := key{"tools/call", "everything", "everything__echo", ""}
	for _, c := range []struct {
		name string
		mp   metric.MeterProvider
	}{{"sdk", p.sdk}, {"meter", p.set}} {
		h, err := meter.NewHistogram[key](c.mp, opDesc, buckets)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				h.Record(k, time.Duration(i%4096)*time.Microsecond)
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					h.Record(k, time.Duration(i%4096)*time.Microsecond)
				}
			})
		})
	}
}

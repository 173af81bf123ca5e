package meter

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/switchboard-mcp/switchboard/routing/attrset"
)

// Histogram is a histogram of durations, in seconds with explicit bucket boundaries, by attribute set (K).
type Histogram[K attrset.Key] struct {
	desc   Desc
	bounds []float64 // seconds, as exported
	upper  []int64   // the same in nanoseconds, as compared
	series table[K, durations]

	// Without a Set: the provider's own instrument, with the attribute sets cached by key.
	sdk  metric.Float64Histogram
	sets *attrset.Cache[K]
}

// durations is one attribute set's aggregation. The count is the buckets' sum, so that a collection sees a count
// and buckets that agree however measurements interleave with it.
type durations struct {
	attrs    attribute.Set
	start    time.Time
	buckets  []atomic.Uint64 // len(bounds)+1: the last is (last bound, +Inf)
	sum      atomic.Int64    // nanoseconds
	min, max atomic.Int64    // nanoseconds; min starts at MaxInt64, max at MinInt64
}

// NewHistogram makes the histogram d in mp's Set when mp is a Provider, else as an instrument of mp. bounds are
// the upper bounds of its buckets, in seconds, ascending.
func NewHistogram[K attrset.Key](mp metric.MeterProvider, d Desc, bounds []float64) (*Histogram[K], error) {
	p, ok := mp.(*Provider)
	if !ok {
		sdk, err := mp.Meter(d.Scope).Float64Histogram(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description),
			metric.WithExplicitBucketBoundaries(bounds...))
		return &Histogram[K]{desc: d, sdk: sdk, sets: &attrset.Cache[K]{}}, err
	}
	return register(p.set, d.Scope, d.Name, func() *Histogram[K] {
		h := &Histogram[K]{desc: d, bounds: append([]float64(nil), bounds...), upper: make([]int64, len(bounds))}
		for i, b := range bounds {
			h.upper[i] = int64(math.Round(b * 1e9))
		}
		return h
	})
}

// Record adds one duration to k's series.
func (h *Histogram[K]) Record(k K, d time.Duration) {
	if h.sdk != nil {
		h.sdk.Record(context.Background(), d.Seconds(), h.sets.Record(k)...)
		return
	}
	s := h.series.get(k, k.Attrs, h.newDurations)
	v := int64(d)
	// Bucket i holds (upper[i-1], upper[i]], as OpenTelemetry's explicit buckets do; most calls fall in the
	// first few, so a linear scan beats a binary search.
	i := 0
	for i < len(h.upper) && v > h.upper[i] {
		i++
	}
	s.buckets[i].Add(1)
	s.sum.Add(v)
	for m := s.min.Load(); v < m && !s.min.CompareAndSwap(m, v); m = s.min.Load() {
	}
	for m := s.max.Load(); v > m && !s.max.CompareAndSwap(m, v); m = s.max.Load() {
	}
}

func (h *Histogram[K]) newDurations(attrs []attribute.KeyValue) *durations {
	s := &durations{attrs: attribute.NewSet(attrs...), start: time.Now(), buckets: make([]atomic.Uint64, len(h.upper)+1)}
	s.min.Store(math.MaxInt64)
	s.max.Store(math.MinInt64)
	return s
}

func (h *Histogram[K]) scope() string { return h.desc.Scope }

func (h *Histogram[K]) collect(now time.Time) (metricdata.Metrics, bool) {
	var points []metricdata.HistogramDataPoint[float64]
	h.series.each(func(s *durations) {
		p := metricdata.HistogramDataPoint[float64]{Attributes: s.attrs, StartTime: s.start, Time: now,
			Bounds: h.bounds, BucketCounts: make([]uint64, len(s.buckets))}
		for i := range s.buckets {
			p.BucketCounts[i] = s.buckets[i].Load()
			p.Count += p.BucketCounts[i]
		}
		if p.Count == 0 {
			return // made, not yet measured
		}
		p.Sum = float64(s.sum.Load()) / 1e9
		p.Min = metricdata.NewExtrema(float64(s.min.Load()) / 1e9)
		p.Max = metricdata.NewExtrema(float64(s.max.Load()) / 1e9)
		points = append(points, p)
	})
	if len(points) == 0 {
		return metricdata.Metrics{}, false
	}
	return metricdata.Metrics{Name: h.desc.Name, Description: h.desc.Description, Unit: h.desc.Unit,
		Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: points}}, true
}

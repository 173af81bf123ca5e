package meter

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/switchboard-mcp/switchboard/routing/attrset"
)

// Counter is a monotonic integer counter by attribute set (K).
type Counter[K attrset.Key] struct {
	desc   Desc
	series table[K, count]

	// Without a Set: the provider's own instrument, with the attribute sets cached by key.
	sdk  metric.Int64Counter
	sets *attrset.Cache[K]
}

// count is one attribute set's total.
type count struct {
	attrs attribute.Set
	start time.Time
	n     atomic.Int64
}

// NewCounter makes the counter d in mp's Set when mp is a Provider, else as an instrument of mp.
func NewCounter[K attrset.Key](mp metric.MeterProvider, d Desc) (*Counter[K], error) {
	p, ok := mp.(*Provider)
	if !ok {
		sdk, err := mp.Meter(d.Scope).Int64Counter(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
		return &Counter[K]{desc: d, sdk: sdk, sets: &attrset.Cache[K]{}}, err
	}
	return register(p.set, d.Scope, d.Name, func() *Counter[K] { return &Counter[K]{desc: d} })
}

// Add adds n (≥ 0) to k's total.
func (c *Counter[K]) Add(k K, n int64) {
	if c.sdk != nil {
		c.sdk.Add(context.Background(), n, c.sets.Add(k)...)
		return
	}
	c.series.get(k, k.Attrs, newCount).n.Add(n)
}

func newCount(attrs []attribute.KeyValue) *count {
	return &count{attrs: attribute.NewSet(attrs...), start: time.Now()}
}

func (c *Counter[K]) scope() string { return c.desc.Scope }

func (c *Counter[K]) collect(now time.Time) (metricdata.Metrics, bool) {
	var points []metricdata.DataPoint[int64]
	c.series.each(func(s *count) {
		points = append(points, metricdata.DataPoint[int64]{Attributes: s.attrs, StartTime: s.start, Time: now, Value: s.n.Load()})
	})
	if len(points) == 0 {
		return metricdata.Metrics{}, false
	}
	return metricdata.Metrics{Name: c.desc.Name, Description: c.desc.Description, Unit: c.desc.Unit,
		Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: points}}, true
}

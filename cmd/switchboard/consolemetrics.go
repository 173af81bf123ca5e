package main

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The overview's rates and latencies come from the gateway's own metrics, as Prometheus would scrape them: the
// histogram of the calls to the upstreams (mcp.client.operation.duration, by upstream, with error.type on a
// failure). Each overview samples it; the figures are the difference between now and the newest sample at least
// the window old (or the start, when there is none yet), so they need no goroutine of their own.

const (
	// callsMetric is mcp.client.operation.duration as the Prometheus exporter names it; upstreamLabel and
	// errorLabel are its attributes switchboard.upstream and error.type.
	callsMetric   = "mcp_client_operation_duration_seconds"
	upstreamLabel = "switchboard_upstream"
	errorLabel    = "error_type"
	// maxMetricSamples bounds the samples kept: they are taken when someone looks, at most this many.
	maxMetricSamples = 64
)

// recentMetrics samples the gateway's call histogram and works out each upstream's recent figures.
type recentMetrics struct {
	handler http.Handler
	window  time.Duration
	now     func() time.Time
	start   time.Time

	mu      sync.Mutex
	samples []metricSample // oldest first
}

// metricSample is the call histogram at one time, by upstream.
type metricSample struct {
	at   time.Time
	byUp map[string]callHistogram
}

// callHistogram is one upstream's cumulative calls: the count, the failures, and the cumulative bucket counts at
// each upper bound.
type callHistogram struct {
	count, errors uint64
	bounds        []float64
	buckets       []uint64
}

// upstreamFigures are one upstream's figures over the window.
type upstreamFigures struct {
	calls     int
	perMinute float64
	errorRate float64
	p50, p99  time.Duration
}

func newRecentMetrics(h http.Handler, window time.Duration, now func() time.Time) *recentMetrics {
	return &recentMetrics{handler: h, window: window, now: now, start: now()}
}

// sample takes a sample now and returns each upstream's figures since the baseline, and how far back that is.
func (m *recentMetrics) sample(ctx context.Context) (map[string]upstreamFigures, time.Duration) {
	now := m.now()
	cur := metricSample{at: now, byUp: m.scrape(ctx)}
	m.mu.Lock()
	base := metricSample{at: m.start}
	for _, s := range m.samples {
		if now.Sub(s.at) < m.window {
			break
		}
		base = s
	}
	// Keep the baseline and what is newer; drop every other sample when too many are kept.
	m.samples = slices.DeleteFunc(m.samples, func(s metricSample) bool { return s.at.Before(base.at) })
	if len(m.samples) >= maxMetricSamples {
		thinned := m.samples[:0]
		for i, s := range m.samples {
			if i%2 == 0 {
				thinned = append(thinned, s)
			}
		}
		m.samples = thinned
	}
	m.samples = append(m.samples, cur)
	m.mu.Unlock()

	span := now.Sub(base.at)
	out := map[string]upstreamFigures{}
	for up, h := range cur.byUp {
		out[up] = h.since(base.byUp[up], span)
	}
	return out, span.Round(time.Second)
}

// since is the figures of the calls between earlier and h, over span.
func (h callHistogram) since(earlier callHistogram, span time.Duration) upstreamFigures {
	var f upstreamFigures
	calls := h.count - min(earlier.count, h.count)
	if calls == 0 {
		return f
	}
	f.calls = int(calls)
	if span > 0 {
		f.perMinute = float64(calls) / span.Minutes()
	}
	f.errorRate = float64(h.errors-min(earlier.errors, h.errors)) / float64(calls)
	delta := make([]uint64, len(h.buckets))
	for i, c := range h.buckets {
		var e uint64
		if i < len(earlier.buckets) && slices.Equal(earlier.bounds, h.bounds) {
			e = earlier.buckets[i]
		}
		delta[i] = c - min(e, c)
	}
	f.p50, f.p99 = quantile(h.bounds, delta, calls, 0.5), quantile(h.bounds, delta, calls, 0.99)
	return f
}

// quantile estimates the q-quantile of a histogram's cumulative bucket counts, interpolating linearly within the
// bucket, as Prometheus's histogram_quantile does. A quantile past the last finite bound is that bound.
func quantile(bounds []float64, cum []uint64, total uint64, q float64) time.Duration {
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for i, b := range bounds {
		if float64(cum[i]) >= rank {
			in := cum[i] - below
			v := b
			if in > 0 {
				v = lower + (b-lower)*(rank-float64(below))/float64(in)
			}
			return time.Duration(v * float64(time.Second))
		}
		lower, below = b, cum[i]
	}
	if len(bounds) == 0 {
		return 0
	}
	return time.Duration(bounds[len(bounds)-1] * float64(time.Second))
}

// scrape reads the call histogram from the gateway's Prometheus exposition, summed by upstream.
func (m *recentMetrics) scrape(ctx context.Context) map[string]callHistogram {
	out := map[string]callHistogram{}
	if m.handler == nil {
		return out
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	rec := httptest.NewRecorder()
	m.handler.ServeHTTP(rec, req)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		return out
	}
	fam, ok := families[callsMetric]
	if !ok {
		return out
	}
	for _, mt := range fam.GetMetric() {
		hist := mt.GetHistogram()
		if hist == nil {
			continue
		}
		up, failed := labelsOf(mt)
		if up == "" {
			continue
		}
		h := out[up]
		n := hist.GetSampleCount()
		h.count += n
		if failed {
			h.errors += n
		}
		bounds := make([]float64, 0, len(hist.GetBucket()))
		for _, b := range hist.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
		if h.bounds == nil {
			h.bounds, h.buckets = bounds, make([]uint64, len(bounds))
		}
		if slices.Equal(h.bounds, bounds) {
			for i, b := range hist.GetBucket()[:len(bounds)] {
				h.buckets[i] += b.GetCumulativeCount()
			}
		}
		out[up] = h
	}
	return out
}

// labelsOf is a series' upstream, and whether it counts failed calls.
func labelsOf(mt *dto.Metric) (upstream string, failed bool) {
	for _, l := range mt.GetLabel() {
		switch l.GetName() {
		case upstreamLabel:
			upstream = l.GetValue()
		case errorLabel:
			failed = l.GetValue() != ""
		}
	}
	return upstream, failed
}

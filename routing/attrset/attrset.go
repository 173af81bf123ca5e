// Package attrset caches the OpenTelemetry attribute sets of measurements by a comparable key, so that recording
// one is a map read and no allocation. Package meter's instruments record with it when their provider has no
// meter.Set (a test's, a library user's), and key their own aggregation by the same keys.
package attrset

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Key is what a Cache is keyed by: a comparable value of bounded fields (names, methods, error classes) that
// gives the attributes it stands for.
type Key interface {
	comparable
	Attrs() []attribute.KeyValue
}

// MaxSets bounds a Cache; beyond it, sets are made per measurement rather than kept.
const MaxSets = 4096

// Cache keeps attribute sets by key. Its zero value is ready to use; it is safe for concurrent use.
type Cache[K Key] struct {
	mu   sync.RWMutex
	sets map[K]options
}

// options are one set's measurement options, as the slices Add and Record take: passed with ..., a kept slice
// costs nothing, where a fresh one would escape through the instrument's interface and allocate each time.
type options struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// Add returns the options of an Add (a counter's, a gauge's) carrying k's attribute set.
func (c *Cache[K]) Add(k K) []metric.AddOption { return c.get(k).add }

// Record returns the options of a Record (a histogram's) carrying k's attribute set.
func (c *Cache[K]) Record(k K) []metric.RecordOption { return c.get(k).record }

func (c *Cache[K]) get(k K) options {
	c.mu.RLock()
	o, ok := c.sets[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	set := metric.WithAttributeSet(attribute.NewSet(k.Attrs()...))
	o = options{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	c.mu.Lock()
	if c.sets == nil {
		c.sets = map[K]options{}
	}
	if len(c.sets) < MaxSets {
		c.sets[k] = o
	}
	c.mu.Unlock()
	return o
}

// Package attrset caches the OpenTelemetry attribute sets of measurements by a comparable key, so that recording
// one is a map read and no allocation. The router's upstream metrics and the front end's server metrics share it.
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
	sets map[K]metric.MeasurementOption
}

// Get returns the measurement option carrying k's attribute set.
func (c *Cache[K]) Get(k K) metric.MeasurementOption {
	c.mu.RLock()
	o, ok := c.sets[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(k.Attrs()...))
	c.mu.Lock()
	if c.sets == nil {
		c.sets = map[K]metric.MeasurementOption{}
	}
	if len(c.sets) < MaxSets {
		c.sets[k] = o
	}
	c.mu.Unlock()
	return o
}

package hybrid

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestMemoryCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := NewMemoryCache(3)
	keys := func() []string {
		got, err := c.GetVectors(ctx, []string{"a", "b", "c", "d", "e"})
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(got))
	}
	for _, step := range []struct {
		set, get []string // SetVectors, then GetVectors (a use)
		want     []string // then held (keys() reads every key but marks only what is there; run last)
	}{
		{set: []string{"a", "b", "c"}},                      // c b a
		{get: []string{"a"}},                                // a c b
		{set: []string{"d"}},                                // d a c: b out
		{set: []string{"c"}},                                // c d a
		{set: []string{"e"}, want: []string{"c", "d", "e"}}, // e c d: a out
	} {
		for _, k := range step.set {
			if err := c.SetVectors(ctx, map[string][]float32{k: {1, 2}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.GetVectors(ctx, step.get); err != nil {
			t.Fatal(err)
		}
		if step.want != nil {
			if got := keys(); !slices.Equal(got, step.want) {
				t.Fatalf("held %v, want %v", got, step.want)
			}
		}
	}
	if c.Len() != 3 {
		t.Errorf("Len %d, want 3", c.Len())
	}

	// SetVectors copies; empty vectors are not kept.
	v := []float32{1, 2, 3}
	if err := c.SetVectors(ctx, map[string][]float32{"v": v, "empty": {}}); err != nil {
		t.Fatal(err)
	}
	v[0] = 99
	got, _ := c.GetVectors(ctx, []string{"v", "empty"})
	if len(got) != 1 || !slices.Equal(got["v"], []float32{1, 2, 3}) {
		t.Errorf("GetVectors = %v, want v as set", got)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.GetVectors(cancelled, []string{"v"}); !errors.Is(err, context.Canceled) {
		t.Errorf("GetVectors, cancelled: %v", err)
	}
	if err := c.SetVectors(cancelled, map[string][]float32{"w": {1}}); !errors.Is(err, context.Canceled) {
		t.Errorf("SetVectors, cancelled: %v", err)
	}
	if NewMemoryCache(0).max != DefaultCacheEntries {
		t.Error("NewMemoryCache(0) is not of DefaultCacheEntries")
	}
}

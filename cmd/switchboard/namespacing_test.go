package main

import (
	"slices"
	"testing"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing"
)

// TestNamespacingOf: the config's resourceNamespacing reaches routing as the same mode, and a reload that
// changes it says a restart is needed (it would rename URIs that open sessions subscribed by).
func TestNamespacingOf(t *testing.T) {
	for in, want := range map[config.ResourceNamespacing]routing.Namespacing{
		config.NamespacingAuto: routing.NamespaceAuto, config.NamespacingAlways: routing.NamespaceAlways,
		config.NamespacingNever: routing.NamespaceNever, "": routing.NamespaceAuto,
	} {
		cfg := config.Default()
		cfg.ResourceNamespacing = in
		if got, err := namespacingOf(cfg); err != nil || got != want {
			t.Errorf("namespacingOf(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	old, cur := config.Default(), config.Default()
	cur.ResourceNamespacing = config.NamespacingAlways
	if keys := restartOnly(old, cur); !slices.Contains(keys, "resourceNamespacing") {
		t.Errorf("restartOnly = %v, want resourceNamespacing among them", keys)
	}
}

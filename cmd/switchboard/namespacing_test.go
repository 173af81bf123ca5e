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
	for _, in := range []config.ResourceNamespacing{config.NamespacingAuto, config.NamespacingAlways, config.NamespacingNever, ""} {
		cfg := config.Default()
		cfg.ResourceNamespacing = in
		got, err := namespacingOf(cfg)
		if err != nil || got != string(in) {
			t.Errorf("namespacingOf(%q) = %v, %v; want it as it is", in, got, err)
		}
		// routing takes what the config says.
		if _, err := routing.New(routing.Options{ResourceNamespacing: got}, nil); err != nil {
			t.Errorf("routing.New refuses resourceNamespacing %q: %v", in, err)
		}
	}
	cfg := config.Default()
	cfg.ResourceNamespacing = "sometimes"
	if _, err := namespacingOf(cfg); err == nil {
		t.Error(`namespacingOf("sometimes") is not an error`)
	}
	if _, err := routing.New(routing.Options{ResourceNamespacing: "sometimes"}, nil); err == nil {
		t.Error(`routing.New takes resourceNamespacing "sometimes"`)
	}
	old, cur := config.Default(), config.Default()
	cur.ResourceNamespacing = config.NamespacingAlways
	if keys := restartOnly(old, cur); !slices.Contains(keys, "resourceNamespacing") {
		t.Errorf("restartOnly = %v, want resourceNamespacing among them", keys)
	}
}

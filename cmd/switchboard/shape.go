package main

import (
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/metric"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// shapeOf turns the config's overrides, endpoints and discovery modes into routing's Shape (issues 15 and 16).
// Endpoint policies are the auth side's (wireAuth); routing only narrows by globs.
func shapeOf(cfg *config.Config) routing.Shape {
	var sh routing.Shape
	for _, e := range cfg.Endpoints {
		sh.Endpoints = append(sh.Endpoints, routing.Endpoint{Name: e.Name, Include: e.Include, Exclude: e.Exclude,
			Search: searchMode(e.Discovery, e.AlwaysList, e.ExposeFound)})
	}
	sh.Root = searchMode(cfg.Discovery, cfg.AlwaysList, cfg.ExposeFound)
	if len(cfg.Overrides) > 0 {
		sh.Overrides = make(map[routing.OverrideKey]routing.Override, len(cfg.Overrides))
		for k, o := range cfg.Overrides {
			sh.Overrides[routing.OverrideKey(k)] = routing.Override(o)
		}
	}
	return sh
}

// namespacingOf is routing's resource namespacing of the config's resourceNamespacing. It is read at start only:
// a change would rename the URIs open sessions subscribed by (restartOnly).
func namespacingOf(cfg *config.Config) (string, error) {
	switch n := cfg.ResourceNamespacing; n {
	case "", config.NamespacingAuto, config.NamespacingAlways, config.NamespacingNever:
		return string(n), nil
	}
	return "", fmt.Errorf("routing options: resourceNamespacing %q: use auto, always or never", cfg.ResourceNamespacing)
}

// searchMode is routing's search mode of a discovery setting: nil to list every tool.
func searchMode(d config.Discovery, alwaysList []string, exposeFound bool) *routing.SearchMode {
	if d != config.DiscoverySearch {
		return nil
	}
	return &routing.SearchMode{AlwaysList: alwaysList, ExposeFound: exposeFound}
}

// embedderOf is the embedding provider of a config's search.embeddings (nil without one): vectors cached in the
// shared store when there is one, so replicas and restarts do not pay for them again, else in memory. The
// provider's requests for the tools' vectors, in the background, take the hybrid package's default timeout;
// search.timeout bounds the wait for a query's (Options.SearchTimeout).
func embedderOf(cfg *config.Config, store *state.Redis, log *slog.Logger, mp metric.MeterProvider) (routing.Embedder, error) {
	e := cfg.Search.Embeddings
	if e == nil {
		return nil, nil
	}
	var cache hybrid.VectorCache
	if store != nil {
		cache = store
	}
	emb, err := hybrid.NewEmbedder(hybrid.Config{URL: e.URL, Model: e.Model, APIKey: e.APIKey}, cache, log, mp)
	if err != nil {
		return nil, fmt.Errorf("search.embeddings: %w", err)
	}
	return emb, nil
}

package main

import (
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/metric"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// shapeOf turns the config's overrides, endpoints and discovery modes into routing's Shape (issues 15 and 16).
// Endpoint policies are the auth side's (wireAuth); routing only narrows by globs.
func shapeOf(cfg *config.Config) routing.Shape {
	var sh routing.Shape
	for _, e := range cfg.Endpoints {
		sh.Endpoints = append(sh.Endpoints, routing.Endpoint{Name: e.Name, Include: e.Include, Exclude: e.Exclude,
			Search: searchMode(e.Discovery, e.AlwaysList, e.ExposeFound), Code: codeMode(e.Discovery, e.CodeMode)})
	}
	sh.Root = searchMode(cfg.Discovery, cfg.AlwaysList, cfg.ExposeFound)
	sh.RootCode = codeMode(cfg.Discovery, cfg.CodeMode)
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
	if !d.Searches() {
		return nil
	}
	return &routing.SearchMode{AlwaysList: alwaysList, ExposeFound: exposeFound}
}

// codeMode is routing's code mode of a discovery setting and its codeMode: block (issue 35): nil but for
// discovery: code.
func codeMode(d config.Discovery, cm *config.CodeMode) *codemode.Mode {
	if d != config.DiscoveryCode {
		return nil
	}
	c := config.DefaultCodeMode()
	if cm != nil {
		c = *cm
	}
	w, err := codemode.ParseWrites(c.Writes)
	if err != nil {
		w = codemode.WritesAsk // the config refused anything else
	}
	return &codemode.Mode{Writes: w, Limits: codemode.Limits{WallTime: c.WallTime, CPUTime: c.CPUTime, MaxCalls: c.MaxCalls,
		MaxConcurrent: c.MaxConcurrent, MaxOutput: int(c.MaxOutput)}}
}

// scriptEngine is the engine of code mode's scripts: a pool of sandbox workers, this executable re-executed as
// the hidden sandbox-worker command, each bounded in memory by the OS. Workers start with the first run.
func scriptEngine() (*codemode.Engine, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("code mode: the sandbox worker is this executable, which cannot be found: %w", err)
	}
	return codemode.NewEngine(codemode.Options{Worker: []string{exe, sandboxWorkerCommand}}), nil
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

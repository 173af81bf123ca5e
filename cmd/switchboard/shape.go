package main

import (
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing"
)

// shapeOf turns the config's overrides and endpoints into routing's Shape (issue 15). Endpoint policies are
// the auth side's (wireAuth); routing only narrows by globs.
func shapeOf(cfg *config.Config) routing.Shape {
	var sh routing.Shape
	for _, e := range cfg.Endpoints {
		sh.Endpoints = append(sh.Endpoints, routing.Endpoint{Name: e.Name, Include: e.Include, Exclude: e.Exclude})
	}
	if len(cfg.Overrides) > 0 {
		sh.Overrides = make(map[routing.OverrideKey]routing.Override, len(cfg.Overrides))
		for k, o := range cfg.Overrides {
			sh.Overrides[routing.OverrideKey(k)] = routing.Override(o)
		}
	}
	return sh
}

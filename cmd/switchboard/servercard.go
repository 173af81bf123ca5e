package main

import (
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// serverCardOptions translates the serverCard: block into the front end's options (nil: no cards). The config
// check guarantees publicURL and a valid name when the block is there.
func serverCardOptions(cfg *config.Config) *gateway.ServerCard {
	sc := cfg.ServerCard
	if sc == nil {
		return nil
	}
	return &gateway.ServerCard{
		PublicURL: cfg.PublicURL, Name: sc.Name, Title: sc.Title, Description: sc.Description,
		Primitives: sc.Primitives && cfg.Auth == nil,
	}
}

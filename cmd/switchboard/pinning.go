package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// pinningOf is the router's pinning of a config: its lock file read now, and store for the pins trusted on first
// use and the approvals (nil keeps them in the router's memory). A lock file that is named but missing is an
// error: the admin asked for pins, and trusting whatever comes first instead would hide that.
func pinningOf(cfg *config.Config, store routing.PinStore) (*routing.Pinning, error) {
	pn := cfg.Pinning
	p := &routing.Pinning{Store: store, Block: pn.OnChange == config.PinBlock, StripInvisible: pn.StripInvisible}
	if pn.LockFile == "" {
		return p, nil
	}
	lock, err := pin.ReadLock(pn.LockFile)
	switch {
	case pin.IsNotExist(err):
		return nil, fmt.Errorf("pinning.lockFile %s does not exist: write it with switchboard pin --config FILE", pn.LockFile)
	case err != nil:
		return nil, fmt.Errorf("pinning.lockFile %s: %w", pn.LockFile, err)
	}
	p.Lock, p.LockPath = lock, pn.LockFile
	return p, nil
}

// pinStoreOf is the pin store of the shared state: none without Redis (the router keeps pins in its memory).
func pinStoreOf(store *state.Redis) routing.PinStore {
	if store == nil {
		return nil // not a typed nil: the router tests for none
	}
	return store
}

// definitionAuditor turns routing's definition events into audit log entries of a's chain.
func definitionAuditor(a *auth.Auditor) func(routing.DefinitionEvent) {
	return func(e routing.DefinitionEvent) {
		a.Definition(context.Background(), auth.DefinitionEvent{
			Upstream: e.Upstream, Kind: e.Kind, Name: e.Name, Action: e.Action, Pinned: e.Pinned, Seen: e.Seen, Invisible: e.Invisible,
		})
	}
}

// pinCommand is `switchboard pin`: it connects to every upstream of the config, as the gateway would, and writes
// the lock file with the hash of every tool's and prompt's definition. An upstream it cannot list keeps the pins
// the lock file already has for it; one with none fails the command, and nothing is written.
func pinCommand(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("pin", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("config", "", "config file; its pinning.lockFile is written")
	out := fl.String("lock-file", "", "write this file instead of pinning.lockFile")
	wait := fl.Duration("timeout", time.Minute, "how long to wait for the upstreams to list their tools and prompts")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	cfg, code := loadConfig(*path, stderr)
	if cfg == nil {
		return code
	}
	target := cfg.Pinning.LockFile
	if *out != "" {
		target = *out
	}
	if target == "" {
		fmt.Fprintf(stderr, "switchboard pin: %s sets no pinning.lockFile; add one (pinning: {lockFile: pins.lock}) or pass --lock-file FILE\n", *path)
		return exitUsage
	}
	prev, err := pin.ReadLock(target)
	if err != nil && !pin.IsNotExist(err) {
		fmt.Fprintf(stderr, "switchboard pin: %s: %v\n", target, err)
		return exitFailure
	}
	log, _ := newLogger(config.LogConfig{Level: slog.LevelWarn, Format: cfg.Log.Format}, stderr)
	pinCfg := *cfg
	pinCfg.Pinning = config.Pinning{} // list what the upstreams say, with nothing withheld
	r, err := newRouter(&pinCfg, log, nil, nil, nil, nil)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitFailure
	}
	stop := startRouter(r)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	_ = r.WaitReady(ctx)
	defs, unlisted := r.Definitions()
	var failed []string
	for _, name := range unlisted {
		if old, ok := prev.Upstreams()[name]; ok {
			defs[name] = old
			fmt.Fprintf(stderr, "warning: upstream %q did not list its definitions in %s; its pins in %s are kept\n", name, *wait, target)
			continue
		}
		failed = append(failed, name)
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "switchboard pin: upstream(s) %q did not list their definitions within %s and have no pins yet; nothing was written (see switchboard status, or raise --timeout)\n", failed, *wait)
		return exitFailure
	}
	lock := pin.NewLock(defs)
	if err := lock.Write(target); err != nil {
		fmt.Fprintf(stderr, "switchboard pin: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: pinned %s\n", target, describePins(prev, defs))
	return exitOK
}

// describePins says what a new lock changes against the previous one, per upstream.
func describePins(prev *pin.Lock, defs map[string]pin.Locked) string {
	var old map[string]pin.Locked
	if prev != nil {
		old = prev.Upstreams()
	}
	s := ""
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		d, o := defs[name], old[name]
		var changed, added, removed int
		for _, pair := range [][2]map[string]string{{d.Tools, o.Tools}, {d.Prompts, o.Prompts}} {
			for k, h := range pair[0] {
				if oh, ok := pair[1][k]; !ok {
					added++
				} else if oh != h {
					changed++
				}
			}
			for k := range pair[1] {
				if _, ok := pair[0][k]; !ok {
					removed++
				}
			}
		}
		s += fmt.Sprintf("\n  %s: %d tool(s), %d prompt(s)", name, len(d.Tools), len(d.Prompts))
		if old != nil {
			s += fmt.Sprintf(" (%d changed, %d new, %d gone)", changed, added, removed)
		}
	}
	if s == "" {
		return "no upstream"
	}
	return s
}

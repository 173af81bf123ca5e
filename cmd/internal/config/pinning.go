package config

import (
	"path/filepath"
	"strings"
)

// PinAction is what the gateway does when a tool's definition differs from
// its pin.
type PinAction string

const (
	// PinWarn serves the changed tool, and logs, audits and counts the change.
	PinWarn PinAction = "warn"
	// PinBlock withholds the changed (or new) tool from every list and
	// refuses its calls until an admin approves the change.
	PinBlock PinAction = "block"
)

// Pinning is the pinning: block (issue 15). Pinning is always on: without a
// lock file, the first definition seen is trusted and kept in the state
// store. The zero block means exactly that, with OnChange warn.
type Pinning struct {
	// LockFile is the lock file `switchboard pin` writes ("" = none: trust on
	// first use). ${VAR} is expanded; a relative path is resolved against the
	// directory of the config file, so the gateway and `switchboard pin` agree
	// whatever their working directory.
	LockFile string
	// OnChange is PinWarn (the default) or PinBlock.
	OnChange PinAction
	// StripInvisible removes invisible and bidirectional-control characters
	// from descriptions (they are always flagged in the log and the audit).
	StripInvisible bool
}

func pinningFields() []field { return fieldsOf(pinningTable()) }

// pinningTable is how the pinning: block's keys are read.
func pinningTable() []blockField[Pinning] {
	return []blockField[Pinning]{
		{field: field{key: "lockFile", typ: tString,
			doc: "The lock file `switchboard pin` writes, relative to the config file's directory; ${VAR} is expanded. Unset: trust on first use."},
			read: func(p *parser, f pair, path string, pn *Pinning) {
				v, _, ok := p.expanded(f.val, path)
				switch {
				case !ok:
				case strings.TrimSpace(v) == "":
					p.errorf(resolve(f.val), path, "is empty; give the file `switchboard pin` writes, such as pins.lock, or remove the key to trust each definition on first use")
				case strings.HasSuffix(v, "/") || strings.HasSuffix(v, string(filepath.Separator)):
					p.errorf(resolve(f.val), path, "%q names a directory; give a file, such as %q", v, filepath.Join(v, "pins.lock"))
				default:
					pn.LockFile = resolveFile(p.file, v)
				}
			}},
		{field: field{key: "onChange", typ: tString, def: string(PinWarn), enum: enumOf(PinBlock, PinWarn),
			doc: "block withholds a changed or new tool until an admin approves it; warn serves it, and logs and audits the change."},
			read: func(p *parser, f pair, path string, pn *Pinning) {
				if v, ok := p.oneOf(f, path, "pinning action", []string{string(PinBlock), string(PinWarn)},
					"block (withhold a changed tool until an admin approves it) or warn (serve it, and log and audit the change)", "block or warn"); ok {
					pn.OnChange = PinAction(v)
				}
			}},
		{field: field{key: "stripInvisible", typ: tBool, def: "false",
			doc: "Removes invisible and bidirectional-control characters from descriptions (they are always flagged)."},
			read: func(p *parser, f pair, path string, pn *Pinning) { pn.StripInvisible, _ = p.boolean(f.val, path) }},
	}
}

// readPinning reads the pinning: block.
func readPinning(p *parser, key string, f pair, t *topLevel) {
	readBlock(p, f.val, key, map[string]string{
		"mode":   "did you mean \"onChange\" (block or warn)?",
		"action": "did you mean \"onChange\" (block or warn)?",
	}, pinningTable(), &t.cfg.Pinning)
}

// resolveFile resolves a path written in the config file against the file's
// directory. configFile is the name given to Parse: for Load, the path read.
func resolveFile(configFile, v string) string {
	if filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	return filepath.Join(filepath.Dir(configFile), v)
}

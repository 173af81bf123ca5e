package config

import (
	"fmt"
	"time"
)

// Code mode's consent rules for a script's writes (CodeMode.Writes).
const (
	WritesAsk   = "ask"
	WritesAllow = "allow"
	WritesDeny  = "deny"
)

// CodeMode is the codeMode: block of an endpoint, or of /mcp at the top level
// (issue 35): how the scripts of discovery: code run. Unset: the defaults
// (DefaultCodeMode).
type CodeMode struct {
	// Writes is what a script's call to a tool that is not readOnlyHint does:
	// WritesAsk (the person is asked; refused when the client cannot be),
	// WritesAllow or WritesDeny.
	Writes string
	// WallTime bounds a run from start to end; CPUTime the time its script
	// runs (not awaiting calls or timers).
	WallTime, CPUTime time.Duration
	// MaxCalls bounds a run's tool calls; MaxConcurrent its calls in flight
	// (more wait); MaxOutput what it prints and returns, in bytes (truncated
	// with a note past it).
	MaxCalls, MaxConcurrent int
	MaxOutput               int64
}

// DefaultCodeMode is the codeMode: block's defaults, the engine's.
func DefaultCodeMode() CodeMode {
	return CodeMode{Writes: WritesAsk, WallTime: 30 * time.Second, CPUTime: 10 * time.Second, MaxCalls: 100, MaxConcurrent: 16, MaxOutput: 64 << 10}
}

func codeModeFields() []field { return fieldsOf(codeModeTable()) }

// codeModeTable is how the codeMode: block's keys are read, each within its
// bounds.
func codeModeTable() []blockField[CodeMode] {
	d := DefaultCodeMode()
	duration := func(key string, lo, hi, def time.Duration, doc string, dst func(*CodeMode) *time.Duration) blockField[CodeMode] {
		return blockField[CodeMode]{field: field{key: key, typ: tDuration, def: durationText(def), doc: fmt.Sprintf("%s, %s to %s.", doc, durationText(lo), durationText(hi))},
			read: func(p *parser, f pair, path string, c *CodeMode) {
				v, ok := p.duration(f.val, path, false)
				switch {
				case !ok:
				case v < lo || v > hi:
					p.errorf(resolve(f.val), path, "must be between %s and %s, not %s", lo, hi, v)
				default:
					*dst(c) = v
				}
			}}
	}
	count := func(key string, lo, hi, def int, doc string, dst func(*CodeMode) *int) blockField[CodeMode] {
		return blockField[CodeMode]{field: field{key: key, typ: tInt, min: lo, max: hi, def: fmt.Sprint(def), doc: fmt.Sprintf("%s, %d to %d.", doc, lo, hi)},
			read: func(p *parser, f pair, path string, c *CodeMode) {
				if v, ok := p.integer(f.val, path); ok {
					if v < int64(lo) || v > int64(hi) {
						p.errorf(resolve(f.val), path, "must be between %d and %d, not %d", lo, hi, v)
						return
					}
					*dst(c) = int(v)
				}
			}}
	}
	const outLo, outHi = 1 << 10, 16 << 20
	return []blockField[CodeMode]{
		{field: field{key: "writes", typ: tString, def: WritesAsk, enum: []string{WritesAsk, WritesAllow, WritesDeny},
			doc: "A script's call to a tool not marked readOnlyHint: ask (the user consents through elicitation; refused for clients that cannot ask), allow, or deny."},
			read: func(p *parser, f pair, path string, c *CodeMode) {
				if v, ok := p.oneOf(f, path, "writes rule", []string{WritesAsk, WritesAllow, WritesDeny},
					"ask (the user is asked), allow (scripts write without asking) or deny (scripts only read)", "ask, allow or deny"); ok {
					c.Writes = v
				}
			}},
		duration("wallTime", time.Second, 10*time.Minute, d.WallTime, "Bounds a run from start to end", func(c *CodeMode) *time.Duration { return &c.WallTime }),
		duration("cpuTime", 100*time.Millisecond, 10*time.Minute, d.CPUTime, "Bounds the time a script runs, not awaiting calls or timers",
			func(c *CodeMode) *time.Duration { return &c.CPUTime }),
		count("maxCalls", 1, 10000, d.MaxCalls, "The tool calls of one run", func(c *CodeMode) *int { return &c.MaxCalls }),
		count("maxConcurrent", 1, 64, d.MaxConcurrent, "The calls of one run in flight at once; more wait", func(c *CodeMode) *int { return &c.MaxConcurrent }),
		{field: field{key: "maxOutput", typ: tSize, def: sizeText(d.MaxOutput), doc: "What a run prints and returns, 1KiB to 16MiB; past it the output is truncated with a note."},
			read: func(p *parser, f pair, path string, c *CodeMode) {
				if v, ok := p.size(f.val, path); ok {
					if v < outLo || v > outHi {
						p.errorf(resolve(f.val), path, "must be between %s and %s, not %d bytes", sizeText(outLo), sizeText(outHi), v)
						return
					}
					c.MaxOutput = v
				}
			}},
	}
}

// codeModeBlock reads a codeMode: block at path, over the defaults.
func (p searchSection) codeModeBlock(f pair, path string) *CodeMode {
	c := DefaultCodeMode()
	if _, ok := readBlock(p.parser, f.val, path, map[string]string{
		"consent":  "did you mean \"writes\" (ask, allow or deny)?",
		"timeout":  "did you mean \"wallTime\"?",
		"maxTools": "did you mean \"maxCalls\"?",
	}, codeModeTable(), &c); !ok {
		return nil
	}
	if c.CPUTime > c.WallTime {
		p.warnf(resolve(f.val), path, "cpuTime %s is longer than wallTime %s, so only wallTime bounds a run", c.CPUTime, c.WallTime)
	}
	return &c
}

// checkCodeMode warns about a codeMode: block where it has no effect: without
// discovery: code.
func (p searchSection) checkCodeMode(m *discoveryMeta, mode Discovery, fix string) {
	if mode == DiscoveryCode || m.modeBad || m.codeKey == nil {
		return
	}
	why := "has effect only with discovery: code"
	if m.modeNode != nil {
		why += fmt.Sprintf(" (discovery is %s at %s)", mode, pos(m.modeNode))
	}
	p.warnf(m.codeKey, join(m.path, "codeMode"), "%s; %s, or remove codeMode", why, fix)
}

// text is the block on one line, as String prints it.
func (c *CodeMode) text() string {
	return fmt.Sprintf("{writes: %s, wallTime: %s, cpuTime: %s, maxCalls: %d, maxConcurrent: %d, maxOutput: %s}",
		c.Writes, durationText(c.WallTime), durationText(c.CPUTime), c.MaxCalls, c.MaxConcurrent, sizeText(c.MaxOutput))
}

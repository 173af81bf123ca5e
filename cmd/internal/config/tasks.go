package config

import (
	"fmt"
	"time"
)

// Task support values, as a tool's execution.taskSupport says them.
const (
	TaskForbidden = "forbidden"
	TaskOptional  = "optional"
	TaskRequired  = "required"
)

// Tasks is the tasks: block (issue 19): how the gateway holds the tasks it
// makes for tools whose upstreams take none (an upstream's tasks:, a tool's
// taskSupport override).
type Tasks struct {
	// TTL is how long a task and its result are kept (1h).
	TTL time.Duration
	// PollInterval is the polling interval suggested to clients (1s).
	PollInterval time.Duration
	// SyncWindow is how long a 2026-07-28 client's call runs before it becomes
	// a task (500ms; at least 1ms).
	SyncWindow time.Duration
	// MaxRunning bounds the tasks one replica runs at once (64).
	MaxRunning int
	// MaxPerPrincipal bounds one caller's live tasks across replicas (100).
	MaxPerPrincipal int
	// MaxResultBytes bounds the bytes of the results one replica's tasks keep
	// until their TTL (64 MiB); MaxResultBytesPerPrincipal bounds one
	// caller's on a replica (16 MiB, or MaxResultBytes when that is less; at
	// most MaxResultBytes).
	MaxResultBytes             int64
	MaxResultBytesPerPrincipal int64
}

// DefaultTasks is the tasks: block's defaults.
func DefaultTasks() Tasks {
	return Tasks{TTL: time.Hour, PollInterval: time.Second, SyncWindow: 500 * time.Millisecond, MaxRunning: 64, MaxPerPrincipal: 100,
		MaxResultBytes: 64 << 20, MaxResultBytesPerPrincipal: 16 << 20}
}

func tasksFields() []field { return fieldsOf(tasksTable()) }

// tasksTable is how the tasks: block's keys are read, each within its bounds.
func tasksTable() []blockField[Tasks] {
	d := DefaultTasks()
	duration := func(key string, lo, hi time.Duration, def time.Duration, doc string, dst func(*Tasks) *time.Duration) blockField[Tasks] {
		return blockField[Tasks]{field: field{key: key, typ: tDuration, def: durationText(def), doc: fmt.Sprintf("%s, %s to %s.", doc, durationText(lo), durationText(hi))},
			read: func(p *parser, f pair, path string, tk *Tasks) {
				v, ok := p.duration(f.val, path, false)
				switch {
				case !ok:
				case v < lo || v > hi:
					p.errorf(resolve(f.val), path, "must be between %s and %s, not %s", lo, hi, v)
				default:
					*dst(tk) = v
				}
			}}
	}
	count := func(key string, def int, doc string, dst func(*Tasks) *int) blockField[Tasks] {
		const lo, hi = 1, 100000
		return blockField[Tasks]{field: field{key: key, typ: tInt, min: lo, max: hi, def: fmt.Sprint(def), doc: fmt.Sprintf("%s, %d to %d.", doc, lo, hi)},
			read: func(p *parser, f pair, path string, tk *Tasks) {
				if v, ok := p.integer(f.val, path); ok {
					if v < lo || v > hi {
						p.errorf(resolve(f.val), path, "must be between %d and %d, not %d", lo, hi, v)
						return
					}
					*dst(tk) = int(v)
				}
			}}
	}
	size := func(key string, def int64, doc string, dst func(*Tasks) *int64) blockField[Tasks] {
		const lo, hi = 1 << 20, 64 << 30
		return blockField[Tasks]{field: field{key: key, typ: tSize, def: sizeText(def), doc: doc},
			read: func(p *parser, f pair, path string, tk *Tasks) {
				if v, ok := p.size(f.val, path); ok {
					if v < lo || v > hi {
						p.errorf(resolve(f.val), path, "must be between %s and %s, not %d bytes", sizeText(lo), sizeText(hi), v)
						return
					}
					*dst(tk) = v
				}
			}}
	}
	return []blockField[Tasks]{
		duration("ttl", time.Second, maxTaskTTL, d.TTL, "How long a task and its result are kept", func(t *Tasks) *time.Duration { return &t.TTL }),
		duration("pollInterval", 10*time.Millisecond, time.Hour, d.PollInterval, "The polling interval suggested to clients",
			func(t *Tasks) *time.Duration { return &t.PollInterval }),
		duration("syncWindow", time.Millisecond, time.Minute, d.SyncWindow, "How long a 2026-07-28 client's call runs before it becomes a task",
			func(t *Tasks) *time.Duration { return &t.SyncWindow }),
		count("maxRunning", d.MaxRunning, "The tasks one replica runs at once", func(t *Tasks) *int { return &t.MaxRunning }),
		count("maxPerPrincipal", d.MaxPerPrincipal, "One caller's live tasks across replicas", func(t *Tasks) *int { return &t.MaxPerPrincipal }),
		size("maxResultBytes", d.MaxResultBytes, "The bytes of results one replica's tasks keep, 1MiB to 64GiB.", func(t *Tasks) *int64 { return &t.MaxResultBytes }),
		size("maxResultBytesPerPrincipal", d.MaxResultBytesPerPrincipal,
			"The bytes of results one caller's tasks keep on a replica, at most maxResultBytes (default: the less of 16MiB and maxResultBytes).",
			func(t *Tasks) *int64 { return &t.MaxResultBytesPerPrincipal }),
	}
}

// maxTaskTTL matches the task store's bound.
const maxTaskTTL = 7 * 24 * time.Hour

// readTasks reads the tasks: block.
func readTasks(p *parser, key string, f pair, t *topLevel) {
	tk := &t.cfg.Tasks
	o, ok := readBlock(p, f.val, key, map[string]string{
		"enabled": "tasks are made for the tools an upstream's tasks: or a tool's taskSupport override names; remove enabled",
		"tools":   "mark tools with an upstream's tasks: optional, or overrides: {<upstream>/<tool>: {taskSupport: optional}}",
	}, tasksTable(), tk)
	if !ok {
		return
	}
	if tk.MaxResultBytesPerPrincipal > tk.MaxResultBytes {
		f, set := o.get("maxResultBytesPerPrincipal")
		if !set { // the default is the replica's budget, when that is smaller
			tk.MaxResultBytesPerPrincipal = tk.MaxResultBytes
			return
		}
		p.errorf(resolve(f.val), join(key, "maxResultBytesPerPrincipal"), "must be at most tasks.maxResultBytes (%d bytes), not %d bytes: one caller cannot keep more than the replica", tk.MaxResultBytes, tk.MaxResultBytesPerPrincipal)
	}
}

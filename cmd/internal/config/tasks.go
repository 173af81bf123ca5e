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

func tasksFields() []field {
	d := DefaultTasks()
	return []field{
		{key: "ttl", typ: tDuration, def: durationText(d.TTL), doc: "How long a task and its result are kept, 1s to 168h."},
		{key: "pollInterval", typ: tDuration, def: durationText(d.PollInterval), doc: "The polling interval suggested to clients, 10ms to 1h."},
		{key: "syncWindow", typ: tDuration, def: durationText(d.SyncWindow), doc: "How long a 2026-07-28 client's call runs before it becomes a task, 1ms to 1m."},
		{key: "maxRunning", typ: tInt, min: 1, max: 100000, def: fmt.Sprint(d.MaxRunning), doc: "The tasks one replica runs at once, 1 to 100000."},
		{key: "maxPerPrincipal", typ: tInt, min: 1, max: 100000, def: fmt.Sprint(d.MaxPerPrincipal), doc: "One caller's live tasks across replicas, 1 to 100000."},
		{key: "maxResultBytes", typ: tSize, def: sizeText(d.MaxResultBytes), doc: "The bytes of results one replica's tasks keep, 1MiB to 64GiB."},
		{key: "maxResultBytesPerPrincipal", typ: tSize, def: sizeText(d.MaxResultBytesPerPrincipal),
			doc: "The bytes of results one caller's tasks keep on a replica, at most maxResultBytes (default: the less of 16MiB and maxResultBytes)."},
	}
}

// maxTaskTTL matches the task store's bound.
const maxTaskTTL = 7 * 24 * time.Hour

// readTasks reads the tasks: block.
func readTasks(p *parser, key string, f pair, t *topLevel) {
	o, ok := p.object(f.val, key, keySpec{known: keys(tasksFields()), hints: map[string]string{
		"enabled": "tasks are made for the tools an upstream's tasks: or a tool's taskSupport override names; remove enabled",
		"tools":   "mark tools with an upstream's tasks: optional, or overrides: {<upstream>/<tool>: {taskSupport: optional}}",
	}})
	if !ok {
		return
	}
	tk := &t.cfg.Tasks
	durations := []struct {
		key      string
		dst      *time.Duration
		min, max time.Duration
	}{
		{"ttl", &tk.TTL, time.Second, maxTaskTTL},
		{"pollInterval", &tk.PollInterval, 10 * time.Millisecond, time.Hour},
		{"syncWindow", &tk.SyncWindow, time.Millisecond, time.Minute},
	}
	for _, d := range durations {
		f, ok := o.get(d.key)
		if !ok {
			continue
		}
		path := join(key, d.key)
		v, ok := p.duration(f.val, path, false)
		if !ok {
			continue
		}
		if v < d.min || v > d.max {
			p.errorf(resolve(f.val), path, "must be between %s and %s, not %s", d.min, d.max, v)
			continue
		}
		*d.dst = v
	}
	for _, n := range []struct {
		key string
		dst *int
	}{{"maxRunning", &tk.MaxRunning}, {"maxPerPrincipal", &tk.MaxPerPrincipal}} {
		f, ok := o.get(n.key)
		if !ok {
			continue
		}
		path := join(key, n.key)
		if v, ok := p.integer(f.val, path); ok {
			if v < 1 || v > 100000 {
				p.errorf(resolve(f.val), path, "must be between 1 and 100000, not %d", v)
				continue
			}
			*n.dst = int(v)
		}
	}
	for _, n := range []struct {
		key string
		dst *int64
	}{{"maxResultBytes", &tk.MaxResultBytes}, {"maxResultBytesPerPrincipal", &tk.MaxResultBytesPerPrincipal}} {
		f, ok := o.get(n.key)
		if !ok {
			continue
		}
		path := join(key, n.key)
		if v, ok := p.size(f.val, path); ok {
			if v < 1<<20 || v > 64<<30 {
				p.errorf(resolve(f.val), path, "must be between 1MiB and 64GiB, not %d bytes", v)
				continue
			}
			*n.dst = v
		}
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

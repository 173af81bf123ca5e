package config

import (
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
}

// DefaultTasks is the tasks: block's defaults.
func DefaultTasks() Tasks {
	return Tasks{TTL: time.Hour, PollInterval: time.Second, SyncWindow: 500 * time.Millisecond, MaxRunning: 64, MaxPerPrincipal: 100}
}

func tasksKeys() []string {
	return []string{"ttl", "pollInterval", "syncWindow", "maxRunning", "maxPerPrincipal"}
}

// maxTaskTTL matches the task store's bound.
const maxTaskTTL = 7 * 24 * time.Hour

// tasks reads the tasks: block.
func (p *parser) tasks(key string, f pair, t *topLevel) {
	o, ok := p.object(f.val, key, keySpec{known: tasksKeys(), hints: map[string]string{
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
}

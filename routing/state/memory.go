package state

import (
	"context"
)

// Memory is the in-process Store: the single-replica default, with nothing to run. It is one store per feature
// (memSessions, memEventLog, memBus, memLimiter, memReplicas, memPins, memGrants, memRegistrations, memTasks,
// memTokens, and the vector cache), each with its own lock and only the options it needs; Memory embeds them, so
// their methods are Memory's. Expired entries are dropped when they are next looked at, and swept now and then by the operations
// that add entries. Pins never expire, but like everything else in a Memory they are gone when the process ends
// (see the package documentation).
type Memory struct {
	*memSessions
	*memEventLog
	*memBus
	*memLimiter
	*memReplicas
	*memPins
	*memGrants
	*memRegistrations
	*memTasks
	*memTokens

	vectors memVectors // vectors.go; its zero value is empty, with a lock of its own
}

// NewMemory returns an empty in-process store.
func NewMemory(opts ...Option) *Memory {
	o := buildOptions(opts)
	return &Memory{
		memSessions:      newMemSessions(o.sessionTTL),
		memEventLog:      newMemEventLog(o.eventMaxLen, o.eventTTL),
		memBus:           &memBus{f: newFanout(o.busBuffer)},
		memLimiter:       newMemLimiter(),
		memReplicas:      &memReplicas{replicas: map[string]replicaReg{}},
		memPins:          &memPins{max: o.maxPins, pins: map[string]string{}},
		memGrants:        &memGrants{},
		memRegistrations: &memRegistrations{},
		memTasks:         &memTasks{},
		memTokens:        &memTokens{},
	}
}

// Ping implements Store: memory is always there.
func (m *Memory) Ping(ctx context.Context) error { return ctx.Err() }

// Shutdown implements Store: it closes every subscription's channel. Nothing else of a Memory runs.
func (m *Memory) Shutdown() { m.memBus.shutdown() }

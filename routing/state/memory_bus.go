package state

import (
	"context"
	"fmt"
	"sync"
)

// memBus is Memory's Bus: a fanout within the process.
type memBus struct{ f *fanout }

var _ Bus = (*memBus)(nil)

// Publish implements Bus.
func (m *memBus) Publish(ctx context.Context, channel string, msg []byte) error {
	if err := checkID("channel", channel); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.f.deliver(channel, append([]byte(nil), msg...))
	return nil
}

// Subscribe implements Bus.
func (m *memBus) Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error) {
	if err := checkID("channel", channel); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sub, _ := m.f.add(channel)
	if sub == nil {
		return nil, nil, errShutdown
	}
	var once sync.Once
	return sub.ch, func() { once.Do(func() { m.f.remove(channel, sub) }) }, nil
}

// Dropped implements Bus.
func (m *memBus) Dropped() uint64 { return m.f.dropped.Load() }

// shutdown closes every subscription's channel; Subscribe refuses from then on.
func (m *memBus) shutdown() { m.f.shutdown() }

// errShutdown refuses subscriptions to a store that was shut down.
var errShutdown = fmt.Errorf("%w: shut down", ErrUnavailable)

package state

import (
	"context"
	"fmt"
	"sync"
)

// Publish implements Bus.
func (m *Memory) Publish(ctx context.Context, channel string, msg []byte) error {
	if err := checkID("channel", channel); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.bus.deliver(channel, append([]byte(nil), msg...))
	return nil
}

// Subscribe implements Bus.
func (m *Memory) Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error) {
	if err := checkID("channel", channel); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sub, _ := m.bus.add(channel)
	if sub == nil {
		return nil, nil, errShutdown
	}
	var once sync.Once
	return sub.ch, func() { once.Do(func() { m.bus.remove(channel, sub) }) }, nil
}

// Dropped implements Bus.
func (m *Memory) Dropped() uint64 { return m.bus.dropped.Load() }

// errShutdown refuses subscriptions to a store that was shut down.
var errShutdown = fmt.Errorf("%w: shut down", ErrUnavailable)

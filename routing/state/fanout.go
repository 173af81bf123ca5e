package state

import (
	"sync"
	"sync/atomic"
)

// fanout hands messages to local subscribers, by channel name, without ever blocking the sender: a full
// subscriber channel loses the message, counted in dropped. Memory's bus is a fanout; Redis's reader goroutine
// delivers into one.
type fanout struct {
	buffer  int
	dropped atomic.Uint64

	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{}
	done bool
}

type subscriber struct {
	ch     chan []byte
	closed bool // under fanout.mu
}

func newFanout(buffer int) *fanout {
	return &fanout{buffer: buffer, subs: map[string]map[*subscriber]struct{}{}}
}

// add registers a subscriber of channel; first reports whether it is the channel's only one. nil after shutdown.
func (f *fanout) add(channel string) (sub *subscriber, first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return nil, false
	}
	set := f.subs[channel]
	if set == nil {
		set = map[*subscriber]struct{}{}
		f.subs[channel] = set
	}
	sub = &subscriber{ch: make(chan []byte, f.buffer)}
	set[sub] = struct{}{}
	return sub, len(set) == 1
}

// remove unregisters sub and closes its channel; last reports whether the channel has no subscribers left.
func (f *fanout) remove(channel string, sub *subscriber) (last bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set, ok := f.subs[channel]
	if !ok {
		return false
	}
	if _, ok := set[sub]; !ok {
		return false
	}
	delete(set, sub)
	if !sub.closed {
		sub.closed = true
		close(sub.ch)
	}
	if len(set) == 0 {
		delete(f.subs, channel)
		return true
	}
	return false
}

// deliver offers msg to every subscriber of channel.
func (f *fanout) deliver(channel string, msg []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs[channel] {
		select {
		case sub.ch <- msg:
		default:
			f.dropped.Add(1)
		}
	}
}

// shutdown closes every subscriber channel; add refuses from then on.
func (f *fanout) shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	for _, set := range f.subs {
		for sub := range set {
			if !sub.closed {
				sub.closed = true
				close(sub.ch)
			}
		}
	}
	f.subs = map[string]map[*subscriber]struct{}{}
}

package state

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/redis/go-redis/v9"
)

// MaxPins bounds the pins a store keeps: a definition hash for every tool and prompt of every upstream, which is
// thousands in a large deployment. Past it PinIfAbsent and SetPin refuse new keys with ErrFull, so that a
// misbehaving upstream that invents names cannot grow the store (or Pins' one reply) without end.
const MaxPins = 100_000

// Bounds of a pin's key (upstream, kind and name; the names come from upstreams) and of its hash (a digest).
const (
	maxPinKeyLen  = 4096
	maxPinHashLen = 512
)

func checkPinKey(key string) error {
	if key == "" || len(key) > maxPinKeyLen {
		return fmt.Errorf("%w: pin key of length %d", ErrInvalid, len(key))
	}
	return nil
}

func checkPin(key, hash string) error {
	if err := checkPinKey(key); err != nil {
		return err
	}
	if hash == "" || len(hash) > maxPinHashLen {
		return fmt.Errorf("%w: pin hash of length %d", ErrInvalid, len(hash))
	}
	return nil
}

// errPinsFull refuses a new pin past the store's maximum.
func errPinsFull(key string, limit int) error {
	return fmt.Errorf("%w: %d pins are the most a store keeps: pin %q refused (delete pins of items that are gone)",
		ErrFull, limit, key)
}

// memPins is Memory's PinStore: at most max pins, under one lock.
type memPins struct {
	max int // MaxPins; smaller in tests

	mu   sync.Mutex
	pins map[string]string
}

// redisPins is Redis's PinStore: one hash of at most max fields.
type redisPins struct {
	c      redis.UniversalClient
	prefix string
	max    int // MaxPins; smaller in tests
}

var (
	_ PinStore = (*memPins)(nil)
	_ PinStore = (*redisPins)(nil)
)

func (r *redisPins) pinsKey() string { return r.prefix + "{pins}" }

// PinIfAbsent implements PinStore. Memory's pins live as long as the process: a restart forgets them.
func (m *memPins) PinIfAbsent(ctx context.Context, key, hash string) (string, error) {
	if err := checkPin(key, hash); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.pins[key]; ok {
		return cur, nil
	}
	if len(m.pins) >= m.max {
		return "", errPinsFull(key, m.max)
	}
	m.pins[key] = hash
	return hash, nil
}

// SetPin implements PinStore.
func (m *memPins) SetPin(ctx context.Context, key, hash string) error {
	if err := checkPin(key, hash); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pins[key]; !ok && len(m.pins) >= m.max {
		return errPinsFull(key, m.max)
	}
	m.pins[key] = hash
	return nil
}

// DeletePin implements PinStore.
func (m *memPins) DeletePin(ctx context.Context, key string) error {
	if err := checkPinKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.pins, key)
	m.mu.Unlock()
	return nil
}

// Pins implements PinStore: a copy, the caller's to change.
func (m *memPins) Pins(ctx context.Context) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.pins), nil
}

// PinIfAbsent implements PinStore with one Lua script (pinIfAbsent) on the pins hash: the look-up and the write
// are one atomic step in Redis, so when replicas race to pin a key the first write wins and every other caller
// gets it back. (HSETNX then HGET would be atomic enough for agreement, but not with the MaxPins bound, and would
// take two round trips.)
func (r *redisPins) PinIfAbsent(ctx context.Context, key, hash string) (string, error) {
	if err := checkPin(key, hash); err != nil {
		return "", err
	}
	res, err := pinIfAbsent.Run(ctx, r.c, []string{r.pinsKey()}, key, hash, r.max).Result()
	if err != nil {
		return "", unavailable("pin", err)
	}
	switch v := res.(type) {
	case string:
		return v, nil
	case int64:
		if v == 0 {
			return "", errPinsFull(key, r.max)
		}
	}
	return "", unavailable("pin", errBadReply)
}

// SetPin implements PinStore (HSET, in a script that counts new keys against MaxPins).
func (r *redisPins) SetPin(ctx context.Context, key, hash string) error {
	if err := checkPin(key, hash); err != nil {
		return err
	}
	n, err := setPin.Run(ctx, r.c, []string{r.pinsKey()}, key, hash, r.max).Int()
	if err != nil {
		return unavailable("set pin", err)
	}
	if n == 0 {
		return errPinsFull(key, r.max)
	}
	return nil
}

// DeletePin implements PinStore (HDEL).
func (r *redisPins) DeletePin(ctx context.Context, key string) error {
	if err := checkPinKey(key); err != nil {
		return err
	}
	if err := r.c.HDel(ctx, r.pinsKey(), key).Err(); err != nil {
		return unavailable("delete pin", err)
	}
	return nil
}

// Pins implements PinStore with one HGETALL: at most MaxPins fields, in practice thousands (about 150 bytes each),
// so one reply (at worst some 15 MB) is fine for a listing made at start, on reload or for the admin API; it is not
// meant for every request.
func (r *redisPins) Pins(ctx context.Context) (map[string]string, error) {
	h, err := r.c.HGetAll(ctx, r.pinsKey()).Result()
	if err != nil {
		return nil, unavailable("list pins", err)
	}
	return h, nil
}

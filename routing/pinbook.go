package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// Pinning (issue 15). A pin is the hash of what an upstream said a tool or prompt is (pin.Hash). Each catalog
// build compares every definition with its pin; a definition that differs (a "rug pull"), or that is new in an
// upstream the lock file pins, is drift: logged, audited and counted once, listed by Drifts, and, with Block,
// withheld from every list and refused when called, until an admin approves it (ApprovePins).
//
// Where a pin comes from, first match wins:
//   - the lock file pins the item, and the store holds an approval made against that very lock hash: the
//     approval (a lock file rewritten by `switchboard pin` since then wins over it);
//   - the lock file pins the item: the lock's hash;
//   - the lock file pins the upstream but not the item: an approval made against that (basis "new"), else no pin
//     (drift: new). A pin trusted on first use is no approval: an upstream whose section was missing from the lock
//     file for a while must not come back with the tools it gained meanwhile approved;
//   - the upstream is not in the lock file: the store's pin, set on first use (PinIfAbsent), so replicas agree.
//
// While the lock file pins an item, the store remembers that pin (or that it had none: pinNone) as the item's
// pin-on-first-use, so that when the lock file loses the upstream's section (a hand edit, a bad merge), the pins
// it gave hold, and a withheld change or a new item stays withheld until approved, instead of being trusted anew.

// PinStore keeps pins for every replica; routing/state implements it.
type PinStore interface {
	PinIfAbsent(ctx context.Context, key, hash string) (string, error)
	SetPin(ctx context.Context, key, hash string) error
	Pins(ctx context.Context) (map[string]string, error)
}

// Pinning configures the pins of tool and prompt definitions.
type Pinning struct {
	// Store keeps the pins set on first use and the approvals, shared by replicas; nil keeps them in this
	// router's memory.
	Store PinStore
	// Lock is the lock file's content (nil: none), and LockPath where approvals write it back ("": nowhere).
	Lock     *pin.Lock
	LockPath string
	// Block withholds drifted items from the lists and refuses their calls; otherwise they are served.
	Block bool
	// StripInvisible removes invisible and bidirectional-control characters from the titles and descriptions
	// clients see; they are reported either way.
	StripInvisible bool
}

// Drift is a tool or prompt whose definition differs from its pin.
type Drift struct {
	Upstream string `json:"upstream"`
	Kind     string `json:"kind"` // tool or prompt
	Name     string `json:"name"` // as the upstream names it
	// Exposed is the name clients would see.
	Exposed string `json:"exposed"`
	// Pinned is the pinned hash; "" for an item new in an upstream the lock file pins.
	Pinned string `json:"pinned,omitempty"`
	// Seen is the hash of the definition the upstream offers now.
	Seen string `json:"seen"`
	// Withheld: the item is kept from clients until approved (Pinning.Block).
	Withheld bool `json:"withheld"`
}

// callError is what a client that calls a withheld item is told: what happened, and who can undo it.
func (d *Drift) callError(what, exposed string) string {
	change := "its definition changed since it was pinned (pinned " + d.Pinned + ", now " + d.Seen + ")"
	if d.Pinned == "" {
		change = "it is new in an upstream whose definitions are pinned, and not pinned itself (now " + d.Seen + ")"
	}
	return fmt.Sprintf("%s %q is withheld: %s. An administrator reviews it and approves it with POST /admin/pins/approve, or pins it anew with switchboard pin", what, exposed, change)
}

// DefinitionEvent is an audit event about a definition: drift found, approved, or invisible characters seen.
type DefinitionEvent struct {
	Upstream, Kind, Name string
	// Action: "withheld" or "served" (drift found), "approved", or "invisible".
	Action       string
	Pinned, Seen string
	// Invisible lists the invisible characters found (U+XXXX), for "invisible".
	Invisible []string
}

// pinKey names an item for pinning: its upstream, kind and the upstream's name for it.
type pinKey struct {
	up   string
	kind pin.Kind
	name string
}

// storeKey is the key in the PinStore.
func (k pinKey) storeKey() string { return k.up + "\x00" + string(k.kind) + "\x00" + k.name }

func pinKind(k listKind) pin.Kind {
	if k == kindPrompts {
		return pin.Prompt
	}
	return pin.Tool
}

// Stored values are "<hash>" (trusted on first use, approved with no lock pin, or the pin the lock file gave the
// item when last seen: see remember) or "<hash> <basis>": an approval made when the lock file pinned the item to
// basis ("new" when it pinned the upstream but not the item). pinNone in place of a hash remembers an item that the
// lock file's pinned upstream lacked: it has no pin.
const (
	basisNew = "new"
	pinNone  = "none"
)

func storedValue(hash, basis string) string {
	if basis == "" {
		return hash
	}
	return hash + " " + basis
}

// pinsChannel tells the other replicas of an approval, which then reread the pins.
const pinsChannel = "switchboard:pins"

// pinBook is the router's part of pinning: the policy, the store's pins as last read, and the drift of the
// current catalog.
type pinBook struct {
	core    pinCore
	log     *slog.Logger
	audit   func(DefinitionEvent) // nil: none
	bus     replicaBus            // nil: this replica alone
	changes metric.Int64Counter   // drift found, by upstream, kind and action

	policy atomic.Pointer[Pinning]

	approveMu sync.Mutex // serialises ApprovePins

	mu         sync.Mutex
	cache      map[string]string // store key → stored value, as last read or written
	loaded     bool              // cache holds every stored pin (Pins succeeded)
	drift      map[pinKey]Drift  // of the current catalog
	flagged    map[pinKey]string // the hash whose invisible characters were last reported
	storeOK    bool              // the store answered last time (an outage is logged once)
	fullLogged bool              // the in-memory pins reached state.MaxPins (logged once)
}

// pinCore is the pin book's view of the router: the upstreams whose definitions it pins, the rebuild an approval
// asks for, and the bus channels it follows.
type pinCore interface {
	upstreams() []*upstreamServer
	refresh()
	follow(ctx context.Context, channel string, handle func([]byte))
}

var _ pinCore = (*Router)(nil)

// pinRun judges the items of one rebuild against their pins and collects what it finds. It runs under buildMu.
type pinRun struct {
	ctx     context.Context
	b       *pinBook
	pol     *Pinning
	drift   map[pinKey]Drift
	flagged map[pinKey][]string // invisible characters, by item
	hashes  map[pinKey]string   // the hash flagged, by item
	// storeDown: the store failed during this run; the rest of it asks no more (each ask would wait
	// storeTimeout while the rebuild holds buildMu) and serves items without a known pin unpinned.
	storeDown bool
}

// newPinRun starts the judging of one rebuild; on its first use it reads every stored pin.
func (b *pinBook) newPinRun(ctx context.Context) *pinRun {
	pol := b.policy.Load()
	if pol == nil {
		return nil
	}
	b.mu.Lock()
	loaded := b.loaded
	b.mu.Unlock()
	run := &pinRun{ctx: ctx, b: b, pol: pol, drift: map[pinKey]Drift{}, flagged: map[pinKey][]string{}, hashes: map[pinKey]string{}}
	if !loaded && !b.loadPins(ctx) {
		run.storeDown = true // one wait for a failing store per rebuild, not two
	}
	return run
}

// loadPins replaces the cache with every pin in the store; it reports whether the store answered.
func (b *pinBook) loadPins(ctx context.Context) bool {
	pol := b.policy.Load()
	if pol == nil || pol.Store == nil {
		b.mu.Lock()
		b.loaded = true
		if b.cache == nil {
			b.cache = map[string]string{}
		}
		b.mu.Unlock()
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	all, err := pol.Store.Pins(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.storeTrouble(err)
		return false
	}
	b.cache, b.loaded, b.storeOK = all, true, true
	return true
}

// storeTrouble logs a store failure once per outage. Under b.mu.
func (b *pinBook) storeTrouble(err error) {
	if b.storeOK || b.cache == nil {
		b.log.Warn("the pin store failed: definitions without a known pin are served unpinned until it answers", "err", err)
	}
	b.storeOK = false
	if b.cache == nil {
		b.cache = map[string]string{}
	}
}

// check judges one item and reports whether to withhold it. exposed is the name clients would see.
func (p *pinRun) check(up *upstreamServer, k listKind, it *item, exposed string) (withhold bool) {
	if p == nil || k > kindPrompts || it.hash == "" {
		return false
	}
	key := pinKey{up: up.cfg.Name, kind: pinKind(k), name: it.id}
	if len(it.hidden) > 0 {
		p.flagged[key], p.hashes[key] = it.hidden, it.hash
	}
	pinned, ok := p.pinOf(key, it.hash, it.raw)
	if !ok || pinned == it.hash {
		return false
	}
	if _, dup := p.drift[key]; dup {
		return p.pol.Block // another profile's list: judged already
	}
	p.drift[key] = Drift{Upstream: key.up, Kind: string(key.kind), Name: key.name, Exposed: exposed, Pinned: pinned, Seen: it.hash, Withheld: p.pol.Block}
	return p.pol.Block
}

// pinOf returns an item's pin (see the order at the top of this file); ok is false when it has none and the
// store could not set one.
func (p *pinRun) pinOf(key pinKey, seen string, def []byte) (pinned string, ok bool) {
	b := p.b
	sk := key.storeKey()
	b.mu.Lock()
	stored, has := b.cache[sk]
	b.mu.Unlock()
	hash, basis, _ := strings.Cut(stored, " ")
	if lockHash, inLock := p.pol.Lock.Match(key.up, key.kind, key.name, seen, def); inLock {
		if has && basis == lockHash {
			return hash, true
		}
		p.remember(sk, stored, has, lockHash)
		return lockHash, true
	}
	if p.pol.Lock.Pinned(key.up) {
		if has && basis == basisNew {
			return hash, true
		}
		// Trusted on first use, or remembered as unpinned: no approval made while the lock file pinned the
		// upstream, so the item is new to it.
		p.remember(sk, stored, has, pinNone)
		return "", true
	}
	if has {
		if hash == pinNone {
			return "", true
		}
		if hash != seen {
			if old, err := pin.LegacyHash(key.kind, def); err == nil && old == hash {
				// Kept before pins were RFC 8785: the same definition, its pin rewritten in today's form.
				p.rewrite(sk, storedValue(seen, basis))
				return seen, true
			}
		}
		return hash, true
	}
	if p.pol.Store == nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		if cur, ok := b.cache[sk]; ok {
			return cur, true
		}
		if len(b.cache) >= state.MaxPins {
			if !b.fullLogged {
				p.b.log.Warn("the pins kept in memory are at their maximum: new definitions are served unpinned", "max", state.MaxPins)
				b.fullLogged = true
			}
			return "", false
		}
		b.cache[sk] = seen
		return seen, true
	}
	if p.storeDown {
		return "", false
	}
	sctx, cancel := context.WithTimeout(p.ctx, storeTimeout)
	defer cancel()
	cur, err := p.pol.Store.PinIfAbsent(sctx, sk, seen)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		p.storeDown = true
		p.b.storeTrouble(err)
		return "", false
	}
	b.cache[sk], b.storeOK = cur, true
	h, _, _ := strings.Cut(cur, " ")
	return h, true
}

// rewrite replaces an item's stored pin of the older form with today's (value): in the cache, and in the store
// when it answers.
func (p *pinRun) rewrite(sk, value string) {
	b := p.b
	b.mu.Lock()
	b.cache[sk] = value
	b.mu.Unlock()
	if p.pol.Store == nil || p.storeDown {
		return
	}
	sctx, cancel := context.WithTimeout(p.ctx, storeTimeout)
	defer cancel()
	if err := p.pol.Store.SetPin(sctx, sk, value); err != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		p.storeDown = true
		b.storeTrouble(err)
	}
}

// remember keeps the pin the lock file gives an item (lockHash, or pinNone for an item its pinned upstream lacks)
// in the store as the item's pin for when the lock file no longer pins its upstream: a section removed by a hand
// edit or a bad merge then leaves the pins it had, and a changed definition that was withheld stays withheld
// instead of being trusted on first use. stored and has are the item's stored value as read. An approval the lock
// file's pin overrides (made against an older lock hash) is replaced: the lock file rewritten since wins, there too.
func (p *pinRun) remember(sk, stored string, has bool, want string) {
	if hash, _, _ := strings.Cut(stored, " "); has && hash == want {
		return
	}
	b := p.b
	if p.pol.Store == nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.cache[sk]; ok || len(b.cache) < state.MaxPins {
			b.cache[sk] = want
		}
		return
	}
	if p.storeDown {
		return
	}
	sctx, cancel := context.WithTimeout(p.ctx, storeTimeout)
	defer cancel()
	// First written with PinIfAbsent, so that it cannot replace an approval another replica has just made; a
	// stale value is overwritten.
	cur, err := want, error(nil)
	if has {
		err = p.pol.Store.SetPin(sctx, sk, want)
	} else {
		cur, err = p.pol.Store.PinIfAbsent(sctx, sk, want)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		p.storeDown = true
		p.b.storeTrouble(err)
		return
	}
	if b.cache == nil {
		b.cache = map[string]string{}
	}
	b.cache[sk], b.storeOK = cur, true
}

// settle makes the run's findings current and reports what changed since the last run: new drift and new
// invisible characters are logged, audited and counted once; drift that is gone is logged.
func (p *pinRun) settle() {
	if p == nil {
		return
	}
	b := p.b
	b.mu.Lock()
	prev := b.drift
	b.drift = p.drift
	var fresh []pinKey
	for key, h := range p.hashes {
		if b.flagged[key] != h {
			fresh = append(fresh, key)
		}
	}
	if b.flagged == nil {
		b.flagged = map[pinKey]string{}
	}
	maps.DeleteFunc(b.flagged, func(key pinKey, _ string) bool { _, ok := p.hashes[key]; return !ok })
	maps.Copy(b.flagged, p.hashes)
	b.mu.Unlock()
	for _, key := range sortedPinKeys(p.drift) {
		d := p.drift[key]
		if old, ok := prev[key]; ok && old.Seen == d.Seen && old.Pinned == d.Pinned && old.Withheld == d.Withheld {
			continue
		}
		action := "served"
		if d.Withheld {
			action = "withheld"
		}
		b.log.Warn("definition changed since it was pinned", "upstream", d.Upstream, "kind", d.Kind, "name", d.Name,
			"pinned", d.Pinned, "seen", d.Seen, "action", action,
			"approve", "POST /admin/pins/approve, or switchboard pin with a lock file")
		b.changes.Add(p.ctx, 1, metric.WithAttributes(attribute.String("upstream", d.Upstream),
			attribute.String("kind", d.Kind), attribute.String("action", action)))
		b.auditDefinition(DefinitionEvent{Upstream: d.Upstream, Kind: d.Kind, Name: d.Name, Action: action, Pinned: d.Pinned, Seen: d.Seen})
	}
	for _, key := range sortedPinKeys(prev) {
		if _, ok := p.drift[key]; !ok {
			b.log.Info("definition matches its pin again", "upstream", key.up, "kind", key.kind, "name", key.name)
		}
	}
	slices.SortFunc(fresh, comparePinKeys)
	for _, key := range fresh {
		chars := p.flagged[key]
		b.log.Warn("definition contains invisible or bidirectional-control characters", "upstream", key.up,
			"kind", key.kind, "name", key.name, "characters", chars, "stripped", p.pol.StripInvisible)
		b.auditDefinition(DefinitionEvent{Upstream: key.up, Kind: string(key.kind), Name: key.name, Action: "invisible", Seen: p.hashes[key], Invisible: chars})
	}
}

func (b *pinBook) auditDefinition(e DefinitionEvent) {
	if b.audit != nil {
		b.audit(e)
	}
}

func comparePinKeys(a, b pinKey) int {
	return strings.Compare(a.storeKey(), b.storeKey())
}

func sortedPinKeys[V any](m map[pinKey]V) []pinKey {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, comparePinKeys)
	return keys
}

// SetPinning applies a new pinning policy (a reload, or a lock file rewritten): the catalog is rebuilt, and
// sessions hear list_changed where what they see changed.
func (b *pinBook) SetPinning(p Pinning) {
	b.policy.Store(&p)
	b.mu.Lock()
	b.loaded = false // a store of another config, perhaps
	b.mu.Unlock()
	b.core.refresh()
}

// Drifts lists the tools and prompts whose definitions differ from their pins now, sorted.
func (b *pinBook) Drifts() []Drift {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Drift, 0, len(b.drift))
	for _, key := range sortedPinKeys(b.drift) {
		out = append(out, b.drift[key])
	}
	return out
}

// PinFilter selects the drift an approval accepts; empty fields match anything. Seen, when set, must be the hash
// the item has now, so that an admin approves the definition they reviewed and not one that changed since.
type PinFilter struct {
	Upstream string `json:"upstream,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Name     string `json:"name,omitempty"`
	Seen     string `json:"seen,omitempty"`
}

func (f PinFilter) matches(d Drift) bool {
	return (f.Upstream == "" || f.Upstream == d.Upstream) && (f.Kind == "" || f.Kind == d.Kind) &&
		(f.Name == "" || f.Name == d.Name || f.Name == d.Exposed)
}

// Approval is what ApprovePins did.
type Approval struct {
	Approved []Drift `json:"approved"`
	// LockFile is the lock file written back, when there is one; LockError says why it could not be (the
	// approvals hold anyway, in the store).
	LockFile  string `json:"lockFile,omitempty"`
	LockError string `json:"lockError,omitempty"`
}

// ErrNoDrift reports an approval that matched nothing.
var ErrNoDrift = errors.New("no changed definition matches")

// StaleApprovalError reports an approval of a definition that changed again since it was listed.
type StaleApprovalError struct{ Drift Drift }

func (e *StaleApprovalError) Error() string {
	return fmt.Sprintf("%s %q of upstream %q is now %s, not the definition approved: list the drift again and review it",
		e.Drift.Kind, e.Drift.Name, e.Drift.Upstream, e.Drift.Seen)
}

// AmbiguousApprovalError reports an approval by name alone that matches items of several upstreams: an admin who
// reviewed one must not approve another by accident.
type AmbiguousApprovalError struct {
	Name      string
	Upstreams []string
}

func (e *AmbiguousApprovalError) Error() string {
	return fmt.Sprintf("%q names changed definitions of upstreams %q and %q: say which with \"upstream\"", e.Name, e.Upstreams[0], e.Upstreams[1])
}

// ApprovePins accepts the drift the filter matches: each item's current definition becomes its pin, in the store
// (every replica follows) and in the lock file when there is one. The items return to the lists, and sessions
// hear list_changed.
func (b *pinBook) ApprovePins(ctx context.Context, f PinFilter) (res Approval, err error) {
	// One approval at a time: each derives the lock file from the one before, and a second writer would drop
	// the first's entries.
	b.approveMu.Lock()
	defer b.approveMu.Unlock()
	pol := b.policy.Load()
	if pol == nil {
		return Approval{}, ErrNoDrift
	}
	var todo []Drift
	for _, d := range b.Drifts() {
		if !f.matches(d) {
			continue
		}
		if f.Seen != "" && f.Seen != d.Seen {
			return Approval{}, &StaleApprovalError{Drift: d}
		}
		todo = append(todo, d)
	}
	if len(todo) == 0 {
		return Approval{}, ErrNoDrift
	}
	if f.Name != "" && f.Upstream == "" {
		for _, d := range todo[1:] {
			if d.Upstream != todo[0].Upstream {
				return Approval{}, &AmbiguousApprovalError{Name: f.Name, Upstreams: []string{todo[0].Upstream, d.Upstream}}
			}
		}
	}
	lock, lockChanged := pol.Lock, false
	defer func() {
		// Whatever was approved before a failure holds: this replica rebuilds, the others are told.
		if len(res.Approved) == 0 {
			return
		}
		if lockChanged {
			res.LockFile = pol.LockPath
			if werr := lock.Write(pol.LockPath); werr != nil {
				res.LockError = werr.Error()
				b.log.Warn("approvals are kept in the pin store, but the lock file cannot be written back; run switchboard pin to update it",
					"lockFile", pol.LockPath, "err", werr)
			} else {
				next := *pol
				next.Lock = lock
				b.policy.CompareAndSwap(pol, &next)
			}
		}
		b.announcePins(ctx)
		b.core.refresh()
	}()
	for _, d := range todo {
		key := pinKey{up: d.Upstream, kind: pin.Kind(d.Kind), name: d.Name}
		basis := ""
		if h, ok := pol.Lock.Get(key.up, key.kind, key.name); ok {
			basis = h
		} else if pol.Lock.Pinned(key.up) {
			basis = basisNew
		}
		v := storedValue(d.Seen, basis)
		if pol.Store != nil {
			sctx, cancel := context.WithTimeout(ctx, storeTimeout)
			err := pol.Store.SetPin(sctx, key.storeKey(), v)
			cancel()
			if err != nil {
				return res, fmt.Errorf("approve %s %q of upstream %q (%d approved before it): %w", d.Kind, d.Name, d.Upstream, len(res.Approved), err)
			}
		}
		b.mu.Lock()
		if b.cache == nil {
			b.cache = map[string]string{}
		}
		b.cache[key.storeKey()] = v
		b.mu.Unlock()
		// The lock file pins what it pinned: an upstream trusted on first use stays so (writing its one approved
		// tool would make every other tool of it "new in a pinned upstream").
		if pol.LockPath != "" && pol.Lock.Pinned(key.up) {
			lock, lockChanged = lock.With(key.up, key.kind, key.name, d.Seen), true
		}
		res.Approved = append(res.Approved, d)
		b.log.Info("definition approved", "upstream", d.Upstream, "kind", d.Kind, "name", d.Name, "pinned", d.Pinned, "seen", d.Seen)
		b.auditDefinition(DefinitionEvent{Upstream: d.Upstream, Kind: d.Kind, Name: d.Name, Action: "approved", Pinned: d.Pinned, Seen: d.Seen})
	}
	return res, nil
}

// announcePins tells the other replicas that pins were approved, so that they reread them: one message for a
// whole approval, since each makes every replica reread every pin.
func (b *pinBook) announcePins(ctx context.Context) {
	if b.bus == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := b.bus.Publish(sctx, pinsChannel, []byte("approved")); err != nil {
		b.log.Warn("cannot tell the other replicas of an approval; they apply it when they next reread the pins", "err", err)
	}
}

// run rereads the pins and rebuilds whenever another replica approves one, until ctx ends.
func (b *pinBook) run(ctx context.Context) {
	b.core.follow(ctx, pinsChannel, func([]byte) {
		b.loadPins(ctx)
		b.core.refresh()
	})
}

// Definitions returns the pin of every tool and prompt each upstream lists now, by upstream, for a lock file; and
// the upstreams that have not listed their definitions (down, or still starting), whose pins are unknown.
func (b *pinBook) Definitions() (map[string]pin.Locked, []string) {
	defs := map[string]pin.Locked{}
	var unlisted []string
	for _, up := range b.core.upstreams() {
		if !up.hasListed() {
			unlisted = append(unlisted, up.cfg.Name)
			continue
		}
		lists := up.snapshotLists()
		l := pin.Locked{Tools: map[string]string{}, Prompts: map[string]string{}}
		for _, k := range []listKind{kindTools, kindPrompts} {
			m := l.Tools
			if k == kindPrompts {
				m = l.Prompts
			}
			for _, it := range lists[k] {
				if it.hash != "" {
					m[it.id] = it.hash
				}
			}
		}
		defs[up.cfg.Name] = l
	}
	return defs, unlisted
}

// hashItem fills an item's pin hash and the invisible characters of a tool or prompt.
func hashItem(k listKind, it *item, log *slog.Logger) {
	h, err := pin.Hash(pinKind(k), it.raw)
	if err != nil {
		log.Debug("definition cannot be pinned", "name", it.id, "err", err)
		return
	}
	it.hash, it.hidden = h, pin.InvisibleIn(it.raw)
}

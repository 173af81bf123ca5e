package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// An upstream's lists: fetched (every page) through its main session when they change, kept for the catalog,
// with what they said of themselves (ttlMs) and what was wrong with them (malformed items).

// invalidate marks lists for refetching.
func (up *upstreamServer) invalidate(kinds ...listKind) {
	up.mu.Lock()
	for _, k := range kinds {
		up.dirty[k] = true
	}
	up.mu.Unlock()
	select {
	case up.kick <- struct{}{}:
	default:
	}
}

// refresher refetches dirty lists, coalescing bursts of list_changed into one fetch (design §5).
func (up *upstreamServer) refresher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-up.kick:
		}
		select { // let a burst of notifications settle
		case <-ctx.Done():
			return
		case <-time.After(listSettle):
		}
		up.mu.Lock()
		dirty := up.dirty
		up.dirty = [numKinds]bool{}
		caps := up.caps
		up.mu.Unlock()
		changed := false
		for k := listKind(0); k < numKinds; k++ {
			if !dirty[k] {
				continue
			}
			var items []item
			if _, ok := caps[k.capability()]; ok {
				fctx, cancel := context.WithTimeout(ctx, up.timeout())
				var err error
				items, err = up.fetch(fctx, k)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					up.r.log.Warn("listing failed", "upstream", up.cfg.Name, "method", k.method(), "err", err)
					up.mu.Lock()
					up.listErrors++
					up.mu.Unlock()
					continue
				}
			}
			up.mu.Lock()
			up.lists[k] = items
			up.listed = true
			up.mu.Unlock()
			changed = true
		}
		if changed {
			up.r.rebuild()
		}
		// Tried only once the catalog holds the lists: readiness promises a complete first catalog.
		up.mu.Lock()
		up.markTriedLocked()
		up.mu.Unlock()
		up.r.readyChanged()
	}
}

// fetch lists every item of a kind through the main link, following the upstream's pagination to the end.
func (up *upstreamServer) fetch(ctx context.Context, k listKind) ([]item, error) {
	return up.fetchFrom(ctx, up.main, k)
}

// fetchFrom lists every item of a kind through l.
func (up *upstreamServer) fetchFrom(ctx context.Context, l *link, k listKind) ([]item, error) {
	var items []item
	cursor := ""
	seen := map[string]bool{}
	for range maxPages {
		var params []byte
		if cursor != "" {
			params = append(append([]byte(`{"cursor":`), jsonrpc.AppendQuote(nil, cursor)...), '}')
		}
		res, err := l.request(ctx, k.method(), params)
		if err != nil {
			return nil, err
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(res, &all); err != nil {
			return nil, fmt.Errorf("%s: malformed result: %w", k.method(), err)
		}
		up.noteListTTL(l, k, all["ttlMs"], cursor == "")
		var next string
		if v, ok := all["nextCursor"]; ok {
			_ = json.Unmarshal(v, &next) // a null or odd cursor ends the list
		}
		var raws []json.RawMessage
		if v, ok := all[k.key()]; ok {
			if err := json.Unmarshal(v, &raws); err != nil {
				return nil, fmt.Errorf("%s: malformed %s: %w", k.method(), k.key(), err)
			}
		}
		for _, raw := range raws {
			if it, ok := up.newItem(k, raw); ok {
				items = append(items, it)
			}
		}
		if next == "" {
			return items, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: the upstream repeated cursor %q", k.method(), next)
		}
		seen[next] = true
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages", k.method(), maxPages)
}

// newItem makes a catalog item of one listed definition; false when it has no usable name or URI.
func (up *upstreamServer) newItem(k listKind, raw []byte) (item, bool) {
	s, e, ok := jsonrpc.Lookup(raw, k.idField())
	if !ok {
		return item{}, false
	}
	id, err := jsonrpc.Unquote(raw[s:e])
	if err != nil || id == "" {
		return item{}, false
	}
	// A member twice (after unescaping) is withheld here, where every list is ingested, so that the catalog, the
	// pins, the search index and every endpoint see one reading of each definition, the one served: otherwise
	// the gateway would hash and strip one "description" and the client's parser keep the other.
	if member, dup := jsonrpc.DuplicateMember(raw); dup {
		up.malformed(k, id, member)
		return item{}, false
	}
	it := item{raw: jsonrpc.Compact(nil, raw), id: id}
	if k == kindTools || k == kindPrompts {
		it.exposed = exposedName(up.cfg.Prefix, id, up.r.opts.nameBudget())
		it.exposedRaw = it.raw
		if it.exposed != id {
			it.exposedRaw = replaceMember(it.raw, "name", it.exposed)
		}
		hashItem(k, &it, up.r.log)
	}
	if k == kindTools {
		it.views = toolViews(it.raw)
	}
	return it, true
}

// malformed reports a definition withheld for having a member twice: logged and audited once per upstream, item
// and member (each list fetch meets it again; a per-client session's fetch too).
func (up *upstreamServer) malformed(k listKind, id, member string) {
	key := k.policyKind() + "\x00" + id + "\x00" + member
	up.mu.Lock()
	_, seen := up.malformedSeen[key]
	full := len(up.malformedSeen) >= maxMalformedLogged
	if !seen && !full {
		if up.malformedSeen == nil {
			up.malformedSeen = map[string]struct{}{}
		}
		up.malformedSeen[key] = struct{}{}
	}
	up.mu.Unlock()
	if seen {
		return
	}
	msg := "definition withheld: it has a member twice, which clients may read otherwise than the gateway"
	if full {
		up.r.log.Debug(msg, "upstream", up.cfg.Name, "kind", k.policyKind(), "name", id, "member", member)
		return
	}
	up.r.log.Warn(msg, "upstream", up.cfg.Name, "kind", k.policyKind(), "name", id, "member", member)
	up.r.auditDefinition(DefinitionEvent{Upstream: up.cfg.Name, Kind: k.policyKind(), Name: id, Action: "malformed"})
}

func (up *upstreamServer) snapshotLists() [numKinds][]item {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.lists
}

// noteListTTL keeps the ttlMs of one page of up's list of kind k, fetched through l (raw; nil when the page has
// none): the first page's replaces what the last list said, later pages' can only shorten it. A negative one
// counts as 0, as the specification has clients read it. Only a 2026-07-28 link's count: the field is that era's
// (some SDKs write ttlMs 0 into every era's lists, which says nothing to a legacy client).
func (up *upstreamServer) noteListTTL(l *link, k listKind, raw json.RawMessage, first bool) {
	var v int64 // none
	if raw != nil && l.modern() {
		ms, ok := jsonrpc.ParseInt(raw)
		switch {
		case !ok:
		case ms < 0:
			v = 1
		default:
			v = min(ms, int64(time.Duration(1<<62)/time.Millisecond)) + 1
		}
	}
	if first {
		up.listTTL[k].Store(v)
		return
	}
	if cur := up.listTTL[k].Load(); v > 0 && (cur == 0 || v < cur) {
		up.listTTL[k].Store(v)
	}
}

func (up *upstreamServer) hasListed() bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.listed
}

// listsFor returns the lists the catalog of a profile uses for this upstream: its profile's template session's
// once it has listed them (and is up), the default template's otherwise.
func (up *upstreamServer) listsFor(profile string) [numKinds][]item {
	if profile != "" && up.template() && !up.modern() {
		up.mu.Lock()
		sh := up.shadows.m[profile]
		up.mu.Unlock()
		if sh != nil && sh.hasListed() && sh.main.isReady() {
			return sh.snapshotLists()
		}
	}
	return up.snapshotLists()
}

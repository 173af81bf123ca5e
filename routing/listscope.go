package routing

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// A 2026-07-28 list result carries caching hints: "public" when "the response does not contain user-specific
// data", "private" when it "contains private data that is not meant to be shared between callers"; ttlMs is
// how long "the client MAY consider the result fresh" (server/utilities/caching.mdx). The front end writes them
// (gateway/modern.go); this says what routing knows of a list: whether the caller shaped it, and how long the
// upstreams let their own lists be kept.

// ListCache reports, for a list request (tools/list, prompts/list, resources/list, resources/templates/list) of
// the session made with ctx, whether its answer is shaped by the caller (private) and the shortest ttlMs the
// upstreams' own lists of that kind carried (capped false when none carried one; then nothing caps it here).
//
// A list is the caller's when a policy judges the request (a policy may have rules per person), when the
// session sees lists of its own (a person's per-user upstreams, persons.go; its own upstream sessions' lists,
// children.go), or, for tools/list, in search mode. Otherwise it is what everyone at the session's endpoint is
// shown: the shared catalog (of the session's capability profile) through the endpoint's view.
func (s *Session) ListCache(ctx context.Context, method string) (private bool, upstreamTTL time.Duration, capped bool) {
	k, ok := listKindOf(method)
	if !ok {
		return true, 0, true // not a list: nothing said here makes it shareable
	}
	private = *s.policy(ctx) != nil || s.catalog() != s.sharedCatalog() || k == kindTools && s.r.embed.searchMode(s) != nil
	for _, up := range s.r.upstreams() {
		if v := up.listTTL[k].Load(); v > 0 && (!capped || time.Duration(v-1)*time.Millisecond < upstreamTTL) {
			upstreamTTL, capped = time.Duration(v-1)*time.Millisecond, true
		}
	}
	return private, upstreamTTL, capped
}

// listKindOf is the kind of list a method lists.
func listKindOf(method string) (listKind, bool) {
	for k := range listKind(numKinds) {
		if k.method() == method {
			return k, true
		}
	}
	return 0, false
}

// noteListTTL keeps the ttlMs of one page of up's list of kind k, fetched through l (raw; nil when the page has
// none): the first page's replaces what the last list said, later pages' can only shorten it. A negative one
// counts as 0, as the specification has clients read it. Only a 2026-07-28 link's count: the field is that era's
// (some SDKs write ttlMs 0 into every era's lists, which says nothing to a legacy client).
func (up *Upstream) noteListTTL(l *link, k listKind, raw json.RawMessage, first bool) {
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

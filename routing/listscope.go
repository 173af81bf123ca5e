package routing

import (
	"encoding/json"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// A 2026-07-28 list result carries caching hints: "public" when "the response does not contain user-specific
// data", "private" when it "contains private data that is not meant to be shared between callers"; ttlMs is
// how long "the client MAY consider the result fresh" (server/utilities/caching.mdx). The front end writes them
// (gateway/modern.go); this says what routing knows of a list: whether the caller shaped it, and how long the
// upstreams let their own lists be kept (Session.ListCache, in sessionapi.go).

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

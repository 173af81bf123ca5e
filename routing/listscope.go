package routing

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

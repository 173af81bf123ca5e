package routing

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// maxSeenURIs bounds the URIs a session remembers from results.
const maxSeenURIs = 1000

// resultTransform composes what a tools/call or prompts/get result needs on its way back: the inner transform
// (task ids) and translation for clients of older protocol versions. It is nil when there is nothing to do, so
// the common answer is spliced, not rebuilt.
func (s *Session) resultTransform(inner func([]byte) []byte) func([]byte) []byte {
	if protocol.AtLeast(s.params.ProtocolVersion, protocol.V20250618) {
		return inner
	}
	return func(res []byte) []byte {
		if inner != nil {
			res = inner(res)
		}
		return downgradeResult(res, s.params.ProtocolVersion)
	}
}

// legacyResult strips a 2026-07-28 upstream's result of what only that era has, for a legacy client: the
// top-level resultType and caching fields, and the server's identity in _meta (an emptied _meta goes too). A
// legacy client's schema has none of them, and the server it knows is the gateway.
func legacyResult(res []byte) []byte {
	out := jsonrpc.DeleteMembers(res, "resultType", "ttlMs", "cacheScope")
	s, e, st := jsonrpc.LookupStatus(out, "_meta")
	if st != jsonrpc.Found {
		return out
	}
	meta := jsonrpc.DeleteMembers(out[s:e], protocol.MetaServerInfo)
	if len(meta) == e-s {
		return out
	}
	if len(bytes.TrimSpace(meta)) == 2 { // {}
		return jsonrpc.DeleteMembers(out, "_meta")
	}
	return jsonrpc.Splice(make([]byte, 0, len(out)), out, jsonrpc.Edit{Start: s, End: e, With: meta})
}

// mayNameResources is a cheap test for results that carry resource links or embedded resources, whose URIs are
// worth remembering (a resource_link "need not appear in resources/list").
func mayNameResources(res []byte) bool {
	return bytes.Contains(res, []byte(`"resource_link"`)) || bytes.Contains(res, []byte(`"resource"`))
}

// noteURIs remembers the resource URIs a result of up names, by the names the client sees them by.
func (s *Session) noteURIs(up *Upstream, res []byte) {
	var v any
	if json.Unmarshal(res, &v) != nil {
		return
	}
	var uris []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if u, ok := e.(string); ok && k == "uri" {
					uris = append(uris, u)
				} else {
					walk(e)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	c := s.catalog()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range uris {
		if len(s.seenURIs) >= maxSeenURIs {
			clear(s.seenURIs)
		}
		s.seenURIs[c.exposeURI(up, u)] = uriRoute{up, u}
	}
}

// downgradeResult makes a tool result safe for a client of an older version: content types its schema lacks
// become text (resource_link arrived in 2025-06-18, audio in 2025-03-26), and structuredContent (2025-06-18)
// gives way to its text form, which the spec asks servers to include anyway "for backwards compatibility".
func downgradeResult(res []byte, version string) []byte {
	var r map[string]json.RawMessage
	if json.Unmarshal(res, &r) != nil {
		return res
	}
	var content []map[string]any
	raw, ok := r["content"]
	if !ok || json.Unmarshal(raw, &content) != nil {
		return res // not a tool result (a prompt's messages pass as they are)
	}
	hasText := false
	for i, blk := range content {
		switch blk["type"] {
		case "text":
			hasText = true
		case "resource_link":
			content[i] = map[string]any{"type": "text", "text": "Resource: " + str(blk["name"]) + " <" + str(blk["uri"]) + ">"}
		case "audio":
			if !protocol.AtLeast(version, protocol.V20250326) {
				content[i] = map[string]any{"type": "text", "text": "[audio content (" + str(blk["mimeType"]) + ") omitted: this client's protocol version has no audio]"}
			}
		}
	}
	if sc, ok := r["structuredContent"]; ok {
		if !hasText {
			content = append(content, map[string]any{"type": "text", "text": string(jsonrpc.Compact(nil, sc))})
		}
		delete(r, "structuredContent")
	}
	b, err := json.Marshal(content)
	if err != nil {
		return res
	}
	r["content"] = b
	out, err := json.Marshal(r)
	if err != nil {
		return res
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// elicitations remembers which session started a URL-mode elicitation, so that the upstream's
// notifications/elicitation/complete reaches that client only ("only to the client that started the
// elicitation").
type elicitations struct {
	mu sync.Mutex
	m  map[elicitationKey]elicitation
}

// elicitationKey scopes an elicitation id to the upstream session that chose it.
type elicitationKey struct {
	l  *link
	id string
}

type elicitation struct {
	s    *Session
	when time.Time
}

// elicitationTTL bounds how long an unfinished elicitation is remembered.
const elicitationTTL = time.Hour

func (r *Router) noteElicitation(l *link, id string, s *Session) {
	e := &r.elicits
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[elicitationKey]elicitation{}
	}
	e.m[elicitationKey{l, id}] = elicitation{s: s, when: time.Now()}
}

// expireElicitations forgets elicitations older than elicitationTTL, or of a session that ended.
func (r *Router) expireElicitations(now time.Time) {
	e := &r.elicits
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range e.m {
		if now.Sub(v.when) > elicitationTTL || isClosed(v.s) {
			delete(e.m, k)
		}
	}
}

func isClosed(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// elicitationComplete routes notifications/elicitation/complete by its elicitationId.
func (l *link) elicitationComplete(m jsonrpc.Message) {
	id, _ := jsonrpc.LookupString(m.Params(), "elicitationId")
	e := &l.r.elicits
	e.mu.Lock()
	rec, ok := e.m[elicitationKey{l, id}]
	delete(e.m, elicitationKey{l, id})
	e.mu.Unlock()
	switch {
	case ok:
		rec.s.notify(clone(m.Raw()))
	case l.owner != nil:
		l.owner.notify(clone(m.Raw()))
	}
}

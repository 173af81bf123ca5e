package routing

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// resultTransform composes, for a client of version, what a tools/call or prompts/get result needs on its way back: the inner transform
// (task ids) and translation for clients of older protocol versions. It is nil when there is nothing to do, so
// the common answer is spliced, not rebuilt.
func resultTransform(version string, inner func([]byte) []byte) func([]byte) []byte {
	if protocol.AtLeast(version, protocol.V20250618) {
		return inner
	}
	return func(res []byte) []byte {
		if inner != nil {
			res = inner(res)
		}
		return downgradeResult(res, version)
	}
}

// legacyResult strips a 2026-07-28 upstream's result of what only that era has, for a legacy client: the
// top-level resultType and caching fields, and the server's identity in _meta (an emptied _meta goes too). A
// legacy client's schema has none of them, and the server it knows is the gateway. A _meta that appears twice is
// cleaned twice: this only takes away, so neither copy may keep what a legacy client must not see.
func legacyResult(res []byte) []byte {
	return jsonrpc.EditMembers(res, []string{"_meta", "resultType", "ttlMs", "cacheScope"}, func(k int, v []byte) ([]byte, bool) {
		if k > 0 {
			return nil, false
		}
		meta := jsonrpc.DeleteMembers(v, protocol.MetaServerInfo)
		return meta, len(meta) == len(v) || len(bytes.TrimSpace(meta)) > 2 // an emptied _meta ({}) goes
	})
}

// mayNameResources is a cheap test for results that carry resource links or embedded resources, whose URIs are
// worth remembering (a resource_link "need not appear in resources/list").
func mayNameResources(res []byte) bool {
	return bytes.Contains(res, []byte(`"resource_link"`)) || bytes.Contains(res, []byte(`"resource"`))
}

// collectURIs returns the string value of every "uri" member, at any depth, of a JSON value, in one pass over
// its bytes: a result that names resources may be large (embedded resources), and decoding it whole to find a
// few URIs cost an allocation per value. Keys are told from string values by the ':' that follows them; a
// string's contents, escaped quotes included, are skipped whole, so "uri" inside a text is never taken for a key.
func collectURIs(b []byte) []string {
	var uris []string
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		ks, ke, ok := stringEnd(b, i)
		if !ok {
			return uris
		}
		i = ke - 1
		j := skipSpace(b, ke)
		if j >= len(b) || b[j] != ':' {
			continue // a string value
		}
		if key := b[ks:ke]; !bytes.Equal(key, []byte(`"uri"`)) {
			if k, err := jsonrpc.Unquote(key); err != nil || k != "uri" {
				continue
			}
		}
		j = skipSpace(b, j+1)
		if j >= len(b) || b[j] != '"' {
			continue // a uri that is not a string: nested values are walked by the loop
		}
		vs, ve, ok := stringEnd(b, j)
		if !ok {
			return uris
		}
		if u, err := jsonrpc.Unquote(b[vs:ve]); err == nil {
			uris = append(uris, u)
		}
		i = ve - 1
	}
	return uris
}

// stringEnd returns the span of the JSON string that starts at b[i] (its quotes included).
func stringEnd(b []byte, i int) (start, end int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return i, j + 1, true
		}
	}
	return 0, 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
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

// note remembers which session an upstream's URL elicitation belongs to.
func (e *elicitations) note(l *link, id string, s *Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[elicitationKey]elicitation{}
	}
	e.m[elicitationKey{l, id}] = elicitation{s: s, when: time.Now()}
}

// expire forgets elicitations older than elicitationTTL, or of a session that ended.
func (e *elicitations) expire(now time.Time) {
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

package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/jcs"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// modern reports whether the upstream speaks the 2026-07-28 era.
func (up *upstreamServer) modern() bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.hello != nil && up.hello.ProtocolVersion >= protocol.Modern
}

// legacyLinks reports whether legacy clients of this stateless upstream get per-client legacy sessions rather
// than the shared stateless link: for a stdio upstream that speaks both eras, as an SDK-built server does. Its
// tools may well send server→client requests, which its SDK refuses in the stateless era; over a legacy session
// they work, as they would for the client directly. (Over HTTP, a server that lists both eras is a stateless one,
// whose legacy sessions could carry no server→client requests at all: there the stateless link and the
// input_required bridge serve legacy clients better.)
func (up *upstreamServer) legacyLinks() bool {
	if up.cfg.Mode != PerClient || up.cfg.Kind != "stdio" || up.cfg.Protocol == "modern" {
		return false
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.hello != nil && up.hello.Modern() && slices.Contains(up.hello.SupportedVersions, protocol.LatestLegacy)
}

// modern reports whether the link's current connection speaks the stateless era.
func (l *link) modern() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn != nil && l.conn.Server.Modern()
}

// metaEdit is what a request's params._meta becomes on its way upstream: forwardWith applies it in the one splice
// that builds the upstream message, together with the id, the name and the progress token.
type metaEdit struct {
	meta    []byte // the new _meta object; nil when it is to go (a legacy upstream's, emptied)
	present bool   // params has a _meta now (else it is to be inserted)
	changed bool   // meta differs from params._meta
}

// upstreamMeta works out the _meta of a request to l's upstream, in the upstream's era. A legacy upstream learnt
// the client's version, capabilities and level in initialize; the stateless era's keys would only mislead it (some
// servers decide per request, from _meta, which era they serve). A stateless upstream needs them on every request:
// a legacy client's capabilities and level come from its session.
func (s *Session) upstreamMeta(l *link, params []byte) metaEdit {
	if params == nil {
		params = []byte(`{}`)
	}
	st, e, hasMeta := jsonrpc.Lookup(params, "_meta")
	if !l.modern() {
		if !hasMeta {
			return metaEdit{}
		}
		meta := jsonrpc.DeleteMembers(params[st:e], protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo, protocol.MetaLogLevel)
		if len(meta) == e-st && &meta[0] == &params[st] {
			return metaEdit{meta: meta, present: true}
		}
		if string(meta) == "{}" {
			meta = nil
		}
		return metaEdit{meta: meta, present: true, changed: true}
	}
	meta := []byte(`{}`)
	if hasMeta {
		meta = params[st:e]
	}
	if me, ok := s.modernMeta(meta, hasMeta); ok {
		return me
	}
	edited := meta
	if v, ok := jsonrpc.LookupString(meta, protocol.MetaProtocolVersion); !ok || v != protocol.Modern {
		edited = jsonrpc.SetMember(edited, protocol.MetaProtocolVersion, []byte(`"`+protocol.Modern+`"`))
	}
	if _, _, ok := jsonrpc.Lookup(meta, protocol.MetaClientCapabilities); !ok {
		caps := s.params.Capabilities
		if len(caps) == 0 {
			caps = json.RawMessage(`{}`)
		}
		edited = jsonrpc.SetMember(edited, protocol.MetaClientCapabilities, caps)
	}
	if _, _, ok := jsonrpc.Lookup(meta, protocol.MetaClientInfo); !ok && len(s.params.ClientInfo) > 0 {
		edited = jsonrpc.SetMember(edited, protocol.MetaClientInfo, s.params.ClientInfo)
	}
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	if _, _, ok := jsonrpc.Lookup(meta, protocol.MetaLogLevel); !ok && level >= 0 {
		edited = jsonrpc.SetMember(edited, protocol.MetaLogLevel, []byte(`"`+logLevels[level]+`"`))
	}
	// A stateless client's own request, already complete, is the common case: it costs no copy.
	unchanged := hasMeta && len(edited) == len(meta) && &edited[0] == &meta[0]
	return metaEdit{meta: edited, present: hasMeta, changed: !unchanged}
}

// modernMeta is upstreamMeta's common case for a modern upstream, in one pass over _meta and one copy: the
// members the era requires that meta lacks are added first, and a protocol version other than the gateway's is
// replaced. ok is false when meta is not an object or has a member twice, for the general path to handle.
func (s *Session) modernMeta(meta []byte, hasMeta bool) (metaEdit, bool) {
	found, ok := jsonrpc.LookupMembers(meta, protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo, protocol.MetaLogLevel)
	if !ok {
		return metaEdit{}, false
	}
	const version = `"` + protocol.Modern + `"`
	var add []byte
	member := func(key string, v []byte) {
		add = append(jsonrpc.AppendQuote(add, key), ':')
		add = append(append(add, v...), ',')
	}
	if !found[0].Found {
		member(protocol.MetaProtocolVersion, []byte(version))
	}
	if !found[1].Found {
		caps := []byte(s.params.Capabilities)
		if len(caps) == 0 {
			caps = []byte(`{}`)
		}
		member(protocol.MetaClientCapabilities, caps)
	}
	if !found[2].Found && len(s.params.ClientInfo) > 0 {
		member(protocol.MetaClientInfo, s.params.ClientInfo)
	}
	if !found[3].Found {
		s.mu.Lock()
		level := s.logLevel
		s.mu.Unlock()
		if level >= 0 {
			member(protocol.MetaLogLevel, []byte(`"`+logLevels[level]+`"`))
		}
	}
	var edits [2]jsonrpc.Edit
	n := 0
	if len(add) > 0 {
		open := bytes.IndexByte(meta, '{') + 1
		if rest := bytes.TrimLeft(meta[open:], " \t\r\n"); len(rest) > 0 && rest[0] == '}' {
			add = add[:len(add)-1] // no member follows
		}
		edits[n] = jsonrpc.Edit{Start: open, End: open, With: add}
		n++
	}
	if pv := found[0]; pv.Found && string(meta[pv.Start:pv.End]) != version {
		edits[n] = jsonrpc.Edit{Start: pv.Start, End: pv.End, With: []byte(version)}
		n++
	}
	if n == 0 {
		// A stateless client's own request, already complete, is the common case: it costs no copy.
		return metaEdit{meta: meta, present: hasMeta, changed: !hasMeta}, true
	}
	return metaEdit{meta: jsonrpc.Splice(make([]byte, 0, len(meta)+len(add)+len(version)), meta, edits[:n]...), present: hasMeta, changed: true}, true
}

// set returns the edit with member key of _meta set to v.
func (me metaEdit) set(key string, v []byte) metaEdit {
	base := me.meta
	if base == nil {
		base = []byte(`{}`)
	}
	me.meta, me.changed = jsonrpc.SetMember(base, key, v), true
	return me
}

// params returns params with the edit applied (a copy), for a message that must be rebuilt.
func (me metaEdit) params(params []byte) []byte {
	if params == nil {
		params = []byte(`{}`)
	}
	if me.meta == nil {
		return jsonrpc.DeleteMembers(params, "_meta")
	}
	return jsonrpc.SetMember(params, "_meta", me.meta)
}

// canonicalJSON re-encodes a JSON object in RFC 8785's canonical form (auth/jcs), so equal capability objects make
// equal pool keys; invalid or empty input, or anything but an object, becomes {}.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	out, err := jcs.Transform(raw)
	if err != nil || out[0] != '{' {
		return json.RawMessage(`{}`)
	}
	return out
}

// sortedKeys returns a map's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// minRediscover bounds how often a stateless upstream's server/discover is fetched again, whatever its ttlMs.
const minRediscover = time.Second

// rediscover fetches a stateless upstream's server/discover again each time the last answer's ttlMs runs out
// ("the client SHOULD consider the result fresh for this many milliseconds after receiving the response",
// server/utilities/caching.mdx), so that the capabilities and instructions the gateway advertises and acts on
// follow the upstream's: a capability it gains has its list fetched, one it loses its list dropped. An answer
// without a positive ttlMs is not polled; the next connection fetches it again. It ends with conn, the
// connection whose answer it keeps fresh.
func (up *upstreamServer) rediscover(l *link, conn *upstream.Conn) {
	ttl := discoverTTL(conn.Server.Result)
	for ttl > 0 {
		t := time.NewTimer(max(ttl, minRediscover))
		if !l.awaitSameConn(conn, t.C) {
			t.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(l.ctx, up.timeout())
		res, err := l.request(ctx, "server/discover", nil)
		cancel()
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Warn("server/discover not refreshed; the last answer stands", "err", err)
			}
			continue // again after the same ttl, unless the connection went
		}
		hello, err := parseDiscover(res)
		if err != nil {
			l.log.Warn("server/discover not refreshed; the last answer stands", "err", err)
			continue
		}
		if up.setHello(&hello) {
			l.log.Info("the upstream's capabilities changed", "capabilities", string(hello.Capabilities))
			up.invalidate(kindTools, kindPrompts, kindResources, kindTemplates)
		}
		ttl = discoverTTL(res)
	}
}

// awaitSameConn waits for tick while l's connection stays conn, reporting false when the link moved on (closed,
// or another connection).
func (l *link) awaitSameConn(conn *upstream.Conn, tick <-chan time.Time) bool {
	for {
		l.mu.Lock()
		same, changed := l.conn == conn && l.state == linkReady, l.changed
		l.mu.Unlock()
		if !same {
			return false
		}
		select {
		case <-tick:
			return true
		case <-changed:
		case <-l.ctx.Done():
			return false
		}
	}
}

// discoverTTL is a DiscoverResult's ttlMs; zero when it has none (or a malformed one).
func discoverTTL(result []byte) time.Duration {
	st, e, ok := jsonrpc.Lookup(result, "ttlMs")
	if !ok {
		return 0
	}
	ms, ok := jsonrpc.ParseInt(result[st:e])
	if !ok || ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// parseDiscover reads a DiscoverResult: what a stateless upstream says of itself.
func parseDiscover(result []byte) (upstream.ServerHello, error) {
	var r struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		ServerInfo        json.RawMessage            `json:"serverInfo"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return upstream.ServerHello{}, fmt.Errorf("server/discover: malformed result: %w", err)
	}
	if !slices.Contains(r.SupportedVersions, protocol.Modern) {
		return upstream.ServerHello{}, fmt.Errorf("server/discover: %s is no longer among the supported versions %v", protocol.Modern, r.SupportedVersions)
	}
	info := r.Meta[protocol.MetaServerInfo]
	if len(info) == 0 || string(info) == "null" {
		info = r.ServerInfo
	}
	return upstream.ServerHello{
		ProtocolVersion: protocol.Modern, Capabilities: r.Capabilities, ServerInfo: info, Instructions: r.Instructions,
		Result: bytes.Clone(result), SupportedVersions: r.SupportedVersions,
	}, nil
}

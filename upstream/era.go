package upstream

import (
	"fmt"
	"slices"
	"sync"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Values of Spec.Protocol: which protocol era to speak to an upstream.
const (
	// ProtocolAuto (or "") probes with server/discover and falls back to the
	// initialize handshake when the upstream does not speak the modern era.
	// A shared stdio upstream (Spec.Shared) that speaks both eras gets the
	// initialize handshake too (preferLegacy).
	ProtocolAuto = "auto"
	// ProtocolLegacy skips the probe: initialize, sessions, the GET stream.
	ProtocolLegacy = "legacy"
	// ProtocolModern requires the probe to find a modern upstream; Dial fails
	// otherwise.
	ProtocolModern = "modern"
)

// checkProtocol validates Spec.Protocol.
func checkProtocol(p string) error {
	switch p {
	case "", ProtocolAuto, ProtocolLegacy, ProtocolModern:
		return nil
	}
	return fmt.Errorf("protocol %q is not one of auto, legacy, modern", p)
}

// protocol returns Spec.Protocol with "" read as ProtocolAuto.
func (s Spec) protocol() string {
	if s.Protocol == "" {
		return ProtocolAuto
	}
	return s.Protocol
}

// era is what a probe found out about an upstream.
type era uint8

const (
	eraUnknown era = iota
	eraLegacy
	eraModern
)

// eraCache remembers an upstream's era across Dials. The gateway dials one
// upstream many times (a session per client), and the specification wants
// the answer kept: "The era determination is a property of the server, not
// of an individual request. Clients SHOULD cache the result for the lifetime
// of the server process (stdio) or origin (HTTP), and MAY persist it across
// restarts of the same server configuration, re-probing if the cached
// assumption later fails."
//
// A Transport is one server configuration (a reload builds a new one), so the
// cache lives in the Transport and covers every child process it starts.
//
//   - A modern verdict is kept with the discover answer (the ServerHello of
//     later Dials, which then do no I/O at all) for the Transport's life.
//   - A legacy verdict is recorded only once an initialize handshake has
//     succeeded after the probe, so a probe that timed out against a server
//     that was merely slow to start is not remembered unless initialize
//     confirmed it. It is dropped when a later initialize is answered with a
//     JSON-RPC error: the sign of an upstream that has become modern-only.
type eraCache struct {
	mu    sync.Mutex
	era   era
	hello ServerHello // the discover answer, for eraModern
}

func (c *eraCache) get() (era, ServerHello) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era, c.hello
}

func (c *eraCache) set(e era, h ServerHello) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.era, c.hello = e, h
}

// forgetLegacy drops a legacy verdict (never a modern one: nothing observed at
// Dial time contradicts it, since a modern Dial does no I/O).
func (c *eraCache) forgetLegacy() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.era == eraLegacy {
		c.era = eraUnknown
	}
}

// preferLegacy reports whether a stdio upstream that answered server/discover
// with sh is spoken to in the legacy era all the same: with protocol auto, when
// it is shared by every client and lists a legacy version too. Its one child is
// local to the replica, so a session costs nothing to keep, and the legacy
// era's requests carry no _meta for the child to check: the Go SDK's server
// spends ~30% less CPU per call (docs/benchmarks.md). What the modern era would carry
// per request, the caller's capabilities, the shared session declares once, as
// it does for any legacy upstream.
func preferLegacy(spec Spec, sh ServerHello) bool {
	return spec.protocol() == ProtocolAuto && spec.Shared && slices.ContainsFunc(sh.SupportedVersions, protocol.SupportedLegacy)
}

package routing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Multi round-trip requests (MRTR, 2026-07-28): "Servers never send requests". A legacy upstream does, during a
// call: sampling, elicitation, roots. For a stateless client the gateway answers the call with an
// InputRequiredResult carrying the upstream's requests, keeps the upstream call parked, and resumes it when the
// client retries "the same method with a new JSON-RPC id", adding inputResponses and echoing requestState
// (design §6). The requestState is the gateway's own: sealed (encrypted and authenticated), bound to the
// principal, the request and the round, and short-lived, because "servers treat requestState as
// attacker-controlled".

const (
	// parkTTL bounds how long an upstream call waits for the client's retry.
	parkTTL = 5 * time.Minute
	// gatherQuiet and gatherWindow: the gateway answers a round once no further request of the same call has come
	// for gatherQuiet, and at the latest gatherWindow after the first, so that a server that asks for several
	// inputs at once (the Go SDK does, concurrently) gets them in one round. A request that comes later only
	// costs one more round.
	gatherQuiet  = time.Millisecond
	gatherWindow = 25 * time.Millisecond
	// statePrefix marks a requestState minted by the gateway; any other is the upstream's own and passes through.
	statePrefix = "sbrs1."
)

// inputAsk is one server→client request of an upstream, waiting for the client's answer.
type inputAsk struct {
	link *link
	upID []byte          // the upstream's id for its request
	req  json.RawMessage // {"method":…,"params":…}, as an InputRequest
}

// park is one parked upstream call and its rounds with the client.
type park struct {
	t       *parkTable
	id      string
	session *Session
	bind    string // hash of principal, method and name: what a retry must match

	mu          sync.Mutex
	cur         *call   // the call on the link now
	attached    bool    // a client request waits for cur's answer
	buf         *Stream // what the upstream sends for the call while no client request waits
	asks        map[string]*inputAsk
	nextKey     int
	round       int
	gather      *time.Timer
	gatherSince time.Time
	done        bool
	// awaiting: the call ended while detached; its answer is in buf for the client's retry, until expire.
	awaiting bool
	expire   *time.Timer
}

// parkTable is the request-state component: it seals the requestState of a parked call (stateToken, openState),
// finds parks by id, and by the live call of a first round still gathering its asks.
type parkTable struct {
	// stateAEAD seals requestState; ownState starts every requestState it seals (OwnsState).
	stateAEAD *vault.Sealer
	ownState  string
	self      string          // Options.Replica, sealed into each state
	registry  replicaRegistry // where StateOwner checks an address; nil: no forwarding
	log       *slog.Logger
	streams   parkCore

	mu     sync.Mutex
	byID   map[string]*park
	byCall map[*call]*park
}

// parkCore is what parking sees of the router: the streams that buffer a detached call's messages.
type parkCore interface {
	NewStream(finals, maxQueued int) *Stream
}

var _ parkCore = (*Router)(nil)

func (t *parkTable) holds(s *Session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.byID {
		if p.session == s {
			return true
		}
	}
	return false
}

// park takes a server→client request of a legacy upstream for a stateless session's call: it joins the call's
// current round, which is answered with an InputRequiredResult once the gather window closes.
func (t *parkTable) park(s *Session, l *link, m jsonrpc.Message, rel *call) {
	if rel == nil || rel.session != s {
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest,
			"switchboard: a 2026-07-28 client can be asked for input only during one of its calls", nil))
		return
	}
	req := append(append(append([]byte(`{"method":`), jsonrpc.AppendQuote(nil, m.Method())...), `,"params":`...), orEmpty(m.Params())...)
	req = append(req, '}')
	a := &inputAsk{link: l, upID: clone(m.ID()), req: req}

	p := rel.park
	t.mu.Lock()
	if p == nil {
		if p = t.byCall[rel]; p == nil {
			p = t.newPark(s, rel)
			if t.byID == nil {
				t.byID, t.byCall = map[string]*park{}, map[*call]*park{}
			}
			t.byID[p.id], t.byCall[rel] = p, p
		}
	}
	t.mu.Unlock()

	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInternalError, "switchboard: the call this request belongs to has ended", nil))
		return
	}
	p.nextKey++
	p.asks[askKey(m.Method(), p.nextKey)] = a
	if p.attached {
		switch {
		case p.gather == nil:
			p.gatherSince = time.Now()
			p.gather = time.AfterFunc(gatherQuiet, p.flush)
		case time.Since(p.gatherSince) < gatherWindow-gatherQuiet:
			p.gather.Reset(gatherQuiet) // fired already? then flush waits for p.mu and takes this request too
		}
	}
	p.mu.Unlock()
}

func (t *parkTable) newPark(s *Session, c *call) *park {
	var idb [12]byte
	rand.Read(idb[:])
	return &park{
		t: t, id: hex.EncodeToString(idb[:]), session: s,
		bind:     bindHash(s.params.Principal, c.method, c.name),
		cur:      c,
		attached: true,
		buf:      t.streams.NewStream(-1, 256),
		asks:     map[string]*inputAsk{},
	}
}

// askKey names an input request in inputRequests: readable, unique within the park.
func askKey(method string, n int) string {
	kind, _, _ := strings.Cut(method, "/")
	return kind + "-" + strconv.Itoa(n)
}

// flush answers the waiting client request with an InputRequiredResult and detaches the upstream call from it.
func (p *park) flush() {
	p.mu.Lock()
	p.gather = nil
	if !p.attached || p.done {
		p.mu.Unlock()
		return
	}
	cur := p.cur
	next := p.detachedCopy(cur)
	if !cur.link.pending.swap(cur, next) {
		// The call ended first (answer, timeout, cancellation): its client has its answer, and the upstream's
		// requests have nobody to answer them.
		p.mu.Unlock()
		next.timer.Stop()
		p.finished()
		return
	}
	if cur.timer != nil {
		cur.timer.Stop()
	}
	p.cur, p.attached = next, false
	p.round++
	result := p.inputRequiredLocked()
	p.mu.Unlock()
	p.t.mu.Lock()
	delete(p.t.byCall, cur)
	p.t.mu.Unlock()
	cur.session.removeCall(cur)
	cur.out.Push(jsonrpc.AppendResult(nil, cur.clientID, result), ClassFinal)
}

// detachedCopy is c with its answers going to the park's buffer, under a timer that gives up on the client.
func (p *park) detachedCopy(c *call) *call {
	n := c.next()
	n.out, n.park = p.buf, p
	n.timer = time.AfterFunc(parkTTL, n.expire)
	return n
}

// inputRequiredLocked builds the InputRequiredResult of the current round; p.mu is held.
func (p *park) inputRequiredLocked() []byte {
	b := []byte(`{"resultType":"input_required","inputRequests":{`)
	for i, k := range sortedKeys(p.asks) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(jsonrpc.AppendQuote(b, k), ':'), p.asks[k].req...)
	}
	b = append(b, `},"requestState":`...)
	b = jsonrpc.AppendQuote(b, p.t.stateToken(p.id, p.round, p.bind, time.Now().Add(parkTTL)))
	return append(b, '}')
}

// finished forgets the park: its call ended.
func (p *park) finished() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	if p.gather != nil {
		p.gather.Stop()
	}
	asks := p.asks
	p.asks = nil
	// A call that ended while no client request waited (the upstream gave up, the wait timed out) keeps its park
	// until the client retries, which collects the answer from the buffer, or until the retry could not come.
	keep := !p.attached
	if keep {
		p.awaiting = true
		p.expire = time.AfterFunc(parkTTL, p.forget)
	}
	p.mu.Unlock()
	if !keep {
		p.forget()
	}
	for _, a := range asks {
		a.link.respond(jsonrpc.AppendError(nil, a.upID, protocol.CodeInternalError, "switchboard: the client's call ended before it answered", nil))
	}
}

// forget removes the park from the tables.
func (p *park) forget() {
	p.t.mu.Lock()
	delete(p.t.byID, p.id)
	for c, q := range p.t.byCall {
		if q == p {
			delete(p.t.byCall, c)
		}
	}
	p.t.mu.Unlock()
}

// withdraw forgets an upstream's request for input that the upstream cancelled: the client is not asked again,
// and an answer it sends for it is ignored. s nil means any session's parks (a shared link's request).
func (t *parkTable) withdraw(s *Session, l *link, upID []byte) {
	t.mu.Lock()
	var parks []*park
	for _, p := range t.byID {
		if s == nil || p.session == s {
			parks = append(parks, p)
		}
	}
	t.mu.Unlock()
	for _, p := range parks {
		p.mu.Lock()
		for k, a := range p.asks {
			if a.link == l && string(a.upID) == string(upID) {
				delete(p.asks, k)
			}
		}
		p.mu.Unlock()
	}
}

// isGatewayState reports whether a requestState looks minted by a Switchboard: this deployment's, or another's in
// front of or behind it (OwnsState tells them apart).
func isGatewayState(state string) bool { return strings.HasPrefix(state, statePrefix) }

// OwnsState reports whether a requestState was minted under this deployment's key (and so names a call parked on
// one of its replicas). Another gateway's state, such as that of a Switchboard behind this one, is the upstream's
// to judge: it passes through untouched. A state with this key's id that does not open was altered: -32602.
func (t *parkTable) OwnsState(state string) bool { return strings.HasPrefix(state, t.ownState) }

// stateKeyID names the requestState key among gateways: a short hash of the secret, which says nothing of it.
func stateKeyID(secret []byte) string {
	h := sha256.Sum256(append([]byte("switchboard requestState key id\x00"), secret...))
	return base64.RawURLEncoding.EncodeToString(h[:6])
}

// resume continues a parked call with the client's retry m (same method, new id), answering the upstream's
// requests with the client's inputResponses.
func (pc *pooledClient) resume(ctx context.Context, m jsonrpc.Message, out *Stream, state string) {
	s := pc.s
	id := m.ID()
	p, err := s.r.parkTable.find(state, bindHash(s.params.Principal, m.Method(), requestName(m)))
	if err != nil {
		replyError(out, id, protocol.CodeInvalidParams, err.Error())
		return
	}
	var responses map[string]json.RawMessage
	if st, e, ok := jsonrpc.Lookup(m.Params(), "inputResponses"); ok {
		if json.Unmarshal(m.Params()[st:e], &responses) != nil {
			replyError(out, id, protocol.CodeInvalidParams, "params.inputResponses must be an object mapping each inputRequests key to its result")
			return
		}
	}
	for k, v := range responses {
		if t := firstByte(v); t != '{' {
			replyError(out, id, protocol.CodeInvalidParams, fmt.Sprintf("params.inputResponses[%q] must be a result object", k))
			return
		}
	}
	p.mu.Lock()
	if p.awaiting {
		// The call ended while the client was away: its answer waits in the buffer for this retry.
		p.awaiting = false
		p.expire.Stop()
		p.mu.Unlock()
		p.forget()
		relayFinal(ctx, p.buf, out, id)
		return
	}
	if p.done || p.attached {
		p.mu.Unlock()
		replyError(out, id, protocol.CodeInvalidParams, "requestState names a call that ended or is being retried already; call again without requestState")
		return
	}
	// The answers go to the upstream once the call is re-attached (below), outside the lock: an upstream that
	// answers at once finds the retry waiting, or, should the swap lose to its answer, the buffer relays it.
	type answer struct {
		a    *inputAsk
		resp json.RawMessage
	}
	var answers []answer
	for k, a := range p.asks {
		if resp, ok := responses[k]; ok {
			answers = append(answers, answer{a, resp})
			delete(p.asks, k)
		}
	}
	cur := p.cur
	n := cur.next()
	n.out, n.clientID, n.started = out, append(n.inline.client[:0], id...), time.Now()
	// Progress from here on belongs to the retry, under its own token or none: the request that carried the first
	// token has been answered ("progress notifications MUST only reference tokens that were provided in an active
	// request").
	n.token = nil
	if st, e, ok := jsonrpc.Lookup(m.Params(), "_meta", "progressToken"); ok {
		n.token = append(n.inline.token[:0], m.Params()[st:e]...)
	}
	n.timer = time.AfterFunc(cur.link.up.timeout(), n.expire)
	// Registered before it can be reached, so that a flush or a cancellation that follows at once finds it.
	s.mu.Lock()
	n.key = s.callKey(n.out, n.clientID)
	s.calls[n.key] = n
	s.mu.Unlock()
	swapped := cur.link.pending.swap(cur, n)
	if swapped {
		cur.timer.Stop()
		p.cur, p.attached = n, true
		if len(p.asks) > 0 && p.gather == nil {
			// Some input is still missing, or was asked for since: ask again at once.
			p.gather = time.AfterFunc(0, p.flush)
		}
	} else {
		// The call ended first: this retry takes its answer from the buffer, and the park is forgotten now
		// rather than kept for a retry that has already come.
		p.attached = true
	}
	p.mu.Unlock()
	for _, an := range answers {
		an.a.link.respond(jsonrpc.AppendResult(nil, an.a.upID, an.resp))
	}
	if !swapped {
		n.timer.Stop()
		s.removeCall(n)
		p.forget()
		relayFinal(ctx, p.buf, out, id)
		return
	}
	for { // what came while no request waited (progress) goes first
		msg, final, ok := p.buf.TryNext()
		if !ok {
			break
		}
		if final {
			out.Push(rewriteID(msg, id), ClassFinal)
			continue
		}
		out.Push(msg, ClassNotice)
	}
}

// relayFinal moves a detached call's last messages to the retry that came for them.
func relayFinal(ctx context.Context, buf *Stream, out *Stream, id []byte) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		msg, final, ok := buf.Next(ctx)
		if !ok {
			replyError(out, id, protocol.CodeInternalError, "switchboard: the parked call ended without an answer; call again")
			return
		}
		if final {
			out.Push(rewriteID(msg, id), ClassFinal)
			return
		}
		out.Push(msg, ClassNotice)
	}
}

// rewriteID returns msg with its id replaced.
func rewriteID(msg, id []byte) []byte {
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return msg
	}
	return m.AppendWithID(nil, id)
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

func orEmpty(params []byte) []byte {
	if len(params) == 0 {
		return []byte(`{}`)
	}
	return params
}

// requestName is what names the target of a request a retry must repeat: the tool or prompt name, or the URI.
func requestName(m jsonrpc.Message) string {
	key := "name"
	if m.MethodIs("resources/read") {
		key = "uri"
	}
	v, _ := jsonrpc.LookupString(m.Params(), key)
	return v
}

// bindHash binds a requestState to who retries what: the principal, the method and the tool or prompt name.
func bindHash(principal, method, name string) string {
	h := sha256.Sum256([]byte(principal + "\x00" + method + "\x00" + name))
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// stateToken mints the requestState of a park's round: statePrefix and the key's id (ownState), then the payload
// "<park>.<round>.<expiry>.<bind>.<replica>" sealed with AES-256-GCM (nonce and ciphertext, base64url), a ".", and
// the GCM tag (base64url). Sealed rather than only signed: the replica's address is internal and the client needs
// none of it. The key derives from the cursor secret, shared by the replicas.
func (t *parkTable) stateToken(id string, round int, bind string, expires time.Time) string {
	payload := id + "." + strconv.Itoa(round) + "." + strconv.FormatInt(expires.Unix(), 10) + "." + bind + "." +
		base64.RawURLEncoding.EncodeToString([]byte(t.self))
	body, tag := t.sealState([]byte(payload))
	return t.ownState + base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(tag)
}

// newStateAEAD returns the sealer of requestState and of exposed task ids: vault's AES-256-GCM under a key derived
// with HKDF-SHA256 (RFC 5869) from the cursor secret, which every replica shares, so that any replica can open a
// state another sealed.
func newStateAEAD(secret []byte) *vault.Sealer {
	return vault.DeriveSealer(secret, "switchboard requestState v2")
}

// sealState encrypts and authenticates a payload, returning nonce+ciphertext and the tag apart.
func (t *parkTable) sealState(payload []byte) (body, tag []byte) {
	sealed := t.stateAEAD.Seal(nil, payload, []byte(statePrefix))
	cut := len(sealed) - vault.TagSize
	return sealed[:cut], sealed[cut:]
}

var errState = errors.New("requestState is not valid: it was altered, or it was issued to another principal or for another request; call again without requestState")

// openState opens a gateway requestState (authenticating it) and returns its fields: park, round, expiry, bind, replica.
func (t *parkTable) openState(state string) ([]string, bool) {
	rest, own := strings.CutPrefix(state, t.ownState)
	b64, t64, ok := strings.Cut(rest, ".")
	if !own || !ok {
		return nil, false
	}
	// Strict: a token that differs only in the unused bits of its last character is another token, not this one.
	body, err1 := base64.RawURLEncoding.Strict().DecodeString(b64)
	tag, err2 := base64.RawURLEncoding.Strict().DecodeString(t64)
	if err1 != nil || err2 != nil || len(body) < vault.NonceSize || len(tag) != vault.TagSize {
		return nil, false
	}
	raw, err := t.stateAEAD.Open(append(body, tag...), []byte(statePrefix))
	if err != nil {
		return nil, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 5 {
		return nil, false
	}
	replica, err := base64.RawURLEncoding.DecodeString(parts[4])
	if err != nil {
		return nil, false
	}
	parts[4] = string(replica)
	return parts, true
}

// StateOwner reports the replica that holds the call a gateway requestState names, when that is another one: the
// front end sends the retry there, with the caller's credentials. So it answers only for a state that opens, is
// bound to this principal and to m's method and name, has not expired, names a replica other than this one that does not
// hold the call, and names an address a replica registered in the shared store: an address is never trusted for
// having been sealed alone (whoever holds the cursor secret can seal any). It reports "" (serve the retry here,
// where it fails with the reason) in every other case, and an error only when the registry cannot be asked.
func (t *parkTable) StateOwner(ctx context.Context, principal string, m jsonrpc.Message, state string) (string, error) {
	if t.registry == nil {
		return "", nil // no replicas to send anything to
	}
	parts, ok := t.openState(state)
	if !ok || parts[3] != bindHash(principal, m.Method(), requestName(m)) || parts[4] == "" || parts[4] == t.self {
		return "", nil
	}
	if exp, err := strconv.ParseInt(parts[2], 10, 64); err != nil || time.Now().Unix() > exp {
		return "", nil
	}
	t.mu.Lock()
	_, here := t.byID[parts[0]]
	t.mu.Unlock()
	if here {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	registered, err := t.registry.ReplicaRegistered(ctx, parts[4])
	if err != nil {
		return "", fmt.Errorf("%w: %w", errStoreUnavailable, err)
	}
	if !registered {
		t.log.Warn("a requestState names a replica that is not registered; the retry is served here", "replica", parts[4])
		return "", nil
	}
	return parts[4], nil
}

// find verifies a gateway requestState and returns its park.
func (t *parkTable) find(state, bind string) (*park, error) {
	parts, ok := t.openState(state)
	if !ok || parts[3] != bind {
		return nil, errState
	}
	round, err1 := strconv.Atoi(parts[1])
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errState
	}
	if time.Now().Unix() > exp {
		return nil, errors.New("requestState has expired; call again without requestState")
	}
	t.mu.Lock()
	p := t.byID[parts[0]]
	t.mu.Unlock()
	if p == nil {
		return nil, errors.New("requestState names a call this gateway no longer holds (it ended, expired, or ran on another replica); call again without requestState")
	}
	p.mu.Lock()
	current := p.round == round
	p.mu.Unlock()
	if !current {
		return nil, errors.New("requestState is from an earlier round of this call; retry with the latest requestState")
	}
	return p, nil
}

package jsonrpc

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// Kind classifies a message.
type Kind uint8

// Message kinds.
const (
	KindInvalid      Kind = iota // zero Message or failed Parse
	KindRequest                  // has method and id
	KindNotification             // has method, no id
	KindResponse                 // has id (null only with error) and exactly one of result/error
)

// String returns a lower-case name for logs.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// span is a half-open byte range of raw; end == 0 means absent, which is
// unambiguous because a member value can never end at offset 0. uint32 keeps
// Message small; Parse rejects inputs of 4 GiB or more.
type span struct{ start, end uint32 }

func (s span) ok() bool { return s.end != 0 }

func (s span) of(b []byte) []byte {
	if s.end == 0 {
		return nil
	}
	return b[s.start:s.end:s.end]
}

// Message is one JSON-RPC message: its raw bytes and the spans of its
// top-level members. It is a small value type meant to be passed by value;
// the zero Message is invalid. A Message aliases the slice given to Parse.
type Message struct {
	raw    []byte
	id     span
	method span
	params span
	result span
	errv   span
	// dup is the first key in params that repeats a key of its own object (see DuplicateMember).
	dup  span
	kind Kind
}

// top-level member indexes for duplicate tracking
const (
	memJSONRPC = iota
	memID
	memMethod
	memParams
	memResult
	memError
	numMembers
)

// memberName is indexed by the mem* constants.
func memberName(i int) string {
	switch i {
	case memJSONRPC:
		return "jsonrpc"
	case memID:
		return "id"
	case memMethod:
		return "method"
	case memParams:
		return "params"
	case memResult:
		return "result"
	}
	return "error"
}

// maxUnknownMembers bounds the pairwise duplicate check of unknown top-level
// keys so hostile input cannot force quadratic work; real messages have none.
const maxUnknownMembers = 32

// Parse validates raw as one JSON-RPC 2.0 message and records the spans of
// its members. It checks full JSON syntax in one pass, requires a top-level
// object with "jsonrpc":"2.0", an id that is a string or number (null only in
// an error response), a string method, structured (object or array) params,
// an error that is an object, and exactly one of result/error in a response.
// Duplicate top-level keys, and keys that case-fold to a member name without
// being it, are rejected. Unknown members are allowed and ignored.
//
// A params object (at any depth) with a member name twice is not refused here, where the request's id is not
// yet known to answer: [Message.DuplicateMember] names it, found in the same scan.
//
// Errors wrap ErrParse (not JSON) or ErrInvalidRequest (JSON but not a valid
// message). Parse keeps raw without copying and does not allocate on success.
func Parse(raw []byte) (Message, error) {
	if uint64(len(raw)) >= math.MaxUint32 {
		return Message{}, invalidErr("message too large")
	}
	i := skipWS(raw, 0)
	if i >= len(raw) {
		return Message{}, syntaxErr(i, "empty input")
	}
	if raw[i] != '{' {
		end, err := scanValue(raw, i, 0)
		if err != nil {
			return Message{}, err
		}
		if end = skipWS(raw, end); end != len(raw) {
			return Message{}, syntaxErr(end, "data after top-level value")
		}
		return Message{}, invalidErr("message is not an object")
	}

	var (
		m        = Message{raw: raw}
		spans    [numMembers]span
		unknown  [maxUnknownMembers]span
		nUnknown int
		semErr   error // first semantic error; syntax errors take precedence
		dup      span  // the first key in params that repeats one of its object
	)
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		i++
		semErr = invalidErr("empty object")
	} else {
		for {
			if i >= len(raw) || raw[i] != '"' {
				return Message{}, syntaxErr(i, "expected object key")
			}
			ks := i
			ke, esc, err := scanString(raw, i)
			if err != nil {
				return Message{}, err
			}
			i = skipWS(raw, ke)
			if i >= len(raw) || raw[i] != ':' {
				return Message{}, syntaxErr(i, "expected ':'")
			}
			vs := skipWS(raw, i+1)
			var ve int
			if k := raw[ks+1 : ke-1]; (esc || (len(k) == 6 && k[0] == 'p')) && isParams(k) && !dup.ok() {
				ve, dup, err = scanParams(raw, vs)
			} else {
				ve, err = scanValue(raw, vs, 1)
			}
			if err != nil {
				return Message{}, err
			}
			if semErr == nil {
				semErr = classify(raw[ks+1:ke-1], esc, span{uint32(ks + 1), uint32(ke - 1)}, span{uint32(vs), uint32(ve)}, &spans, &unknown, &nUnknown, raw)
			}
			i = skipWS(raw, ve)
			if i >= len(raw) {
				return Message{}, syntaxErr(i, "unexpected end of input")
			}
			if raw[i] == ',' {
				i = skipWS(raw, i+1)
				continue
			}
			if raw[i] != '}' {
				return Message{}, syntaxErr(i, "expected ',' or '}'")
			}
			i++
			break
		}
	}
	if i = skipWS(raw, i); i != len(raw) {
		return Message{}, syntaxErr(i, "data after top-level value")
	}
	if semErr != nil {
		return Message{}, semErr
	}

	m.id, m.method, m.params = spans[memID], spans[memMethod], spans[memParams]
	m.result, m.errv = spans[memResult], spans[memError]
	m.dup = dup
	if err := m.validate(spans[memJSONRPC]); err != nil {
		return Message{}, err
	}
	return m, nil
}

func isParams(key []byte) bool {
	exact, _ := keyMatch(key, "params")
	return exact
}

// scanParams scans the params member's value at raw[vs] as scanValue does, and finds the first key that repeats a
// key of its own object (a zero span when none does). Its own frame holds the tracking state, so that the scan of
// every other member, and every message without params, does not pay for it.
func scanParams(raw []byte, vs int) (int, span, error) {
	var u uniqueKeys
	ve, err := scanValueKeys(raw, vs, 1, &u)
	if err != nil || !u.found {
		return ve, span{}, err
	}
	return ve, span{u.dup.start, u.dup.end}, nil
}

// classify records a top-level member, reporting duplicates and look-alike
// keys. key is the string contents without quotes.
func classify(key []byte, esc bool, kspan, vspan span, spans *[numMembers]span, unknown *[maxUnknownMembers]span, nUnknown *int, raw []byte) error {
	// A pure-ASCII key can only fold-match an ASCII name of the same length
	// with the same first letter, which rules out most keys cheaply.
	ascii := !esc && !hasNonASCII(key)
	for k := 0; k < numMembers; k++ {
		name := memberName(k)
		if ascii && (len(key) != len(name) || key[0]|0x20 != name[0]) {
			continue
		}
		exact, fold := keyMatch(key, name)
		if exact {
			if spans[k].ok() {
				return invalidErr("duplicate member " + name)
			}
			spans[k] = vspan
			return nil
		}
		if fold {
			return invalidErr("member " + shortKey(key) + " is ambiguous with " + name)
		}
	}
	for _, u := range unknown[:*nUnknown] {
		if rawEqual(u.of(raw), key) {
			return invalidErr("duplicate member " + shortKey(key))
		}
	}
	if *nUnknown == len(unknown) {
		return invalidErr("too many top-level members")
	}
	unknown[*nUnknown] = kspan
	*nUnknown++
	return nil
}

// shortKey renders a key for an error message, truncated so that a hostile
// key cannot bloat logs.
func shortKey(key []byte) string {
	const limit = 64
	if len(key) > limit {
		return strconv.Quote(string(key[:limit])) + "..."
	}
	return strconv.Quote(string(key))
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// validate applies the JSON-RPC 2.0 rules once all members are known.
func (m *Message) validate(jsonrpc span) error {
	raw := m.raw
	if !jsonrpc.ok() {
		return invalidErr(`missing "jsonrpc"`)
	}
	if v := jsonrpc.of(raw); v[0] != '"' || !rawEqual(v[1:len(v)-1], []byte("2.0")) {
		return invalidErr(`"jsonrpc" must be "2.0"`)
	}
	idNull := false
	if m.id.ok() {
		switch raw[m.id.start] {
		case '"':
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			// MCP: "The request ID MUST be a string or integer". A fraction or an exponent (1.5, 1E400) makes
			// another number, which a peer may round or refuse; integers of any length stay byte-exact.
			if id := m.id.of(raw); bytes.ContainsAny(id, ".eE") {
				return invalidErr(`"id" must be a string or an integer, not ` + string(id[:min(len(id), 32)]))
			}
		case 'n':
			idNull = true
		default:
			return invalidErr(`"id" must be a string or number`)
		}
	}
	if m.params.ok() {
		if c := raw[m.params.start]; c != '{' && c != '[' {
			return invalidErr(`"params" must be an object or array`)
		}
	}
	if m.method.ok() {
		if raw[m.method.start] != '"' {
			return invalidErr(`"method" must be a string`)
		}
		if m.result.ok() || m.errv.ok() {
			return invalidErr(`message has both "method" and "result" or "error"`)
		}
		switch {
		case idNull:
			return invalidErr(`request "id" must not be null`)
		case m.id.ok():
			m.kind = KindRequest
		default:
			m.kind = KindNotification
		}
		return nil
	}
	if m.params.ok() {
		return invalidErr(`"params" without "method"`)
	}
	switch {
	case !m.id.ok():
		return invalidErr(`message has neither "method" nor "id"`)
	case m.result.ok() == m.errv.ok():
		return invalidErr(`response must have exactly one of "result" and "error"`)
	case idNull && !m.errv.ok():
		return invalidErr(`"id" may be null only in an error response`)
	case m.errv.ok() && raw[m.errv.start] != '{':
		return invalidErr(`"error" must be an object`)
	}
	m.kind = KindResponse
	return nil
}

// Raw returns the message bytes as given to Parse (aliased, not copied).
func (m Message) Raw() []byte { return m.raw }

// Kind returns the message kind; KindInvalid for the zero Message.
func (m Message) Kind() Kind { return m.kind }

// ID returns the raw bytes of the id value exactly as sent (for example
// `"a\"b"`, `1e400` or `null`), or nil if there is no id.
func (m Message) ID() []byte { return m.id.of(m.raw) }

// Method returns the unescaped method name, or "" if there is none. Like
// encoding/json it replaces invalid UTF-8 with U+FFFD. It allocates only the
// returned string.
func (m Message) Method() string {
	v := m.method.of(m.raw)
	if v == nil {
		return ""
	}
	body := v[1 : len(v)-1]
	if known := knownMethod(body); known != "" {
		return known // the hot path asks for the method several times a message: no copy for MCP's own
	}
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	s, _ := Unquote(v)
	return s
}

// knownMethod returns MCP's own method names as constants ("" for any other): a switch on string(b) compares
// without converting, so Method costs no allocation for them.
func knownMethod(b []byte) string {
	switch string(b) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "prompts/list":
		return "prompts/list"
	case "prompts/get":
		return "prompts/get"
	case "resources/list":
		return "resources/list"
	case "resources/read":
		return "resources/read"
	case "resources/templates/list":
		return "resources/templates/list"
	case "resources/subscribe":
		return "resources/subscribe"
	case "resources/unsubscribe":
		return "resources/unsubscribe"
	case "completion/complete":
		return "completion/complete"
	case "logging/setLevel":
		return "logging/setLevel"
	case "server/discover":
		return "server/discover"
	case "subscriptions/listen":
		return "subscriptions/listen"
	case "tasks/get":
		return "tasks/get"
	case "tasks/update":
		return "tasks/update"
	case "tasks/cancel":
		return "tasks/cancel"
	case "tasks/result":
		return "tasks/result"
	case "tasks/list":
		return "tasks/list"
	case "sampling/createMessage":
		return "sampling/createMessage"
	case "elicitation/create":
		return "elicitation/create"
	case "roots/list":
		return "roots/list"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/message":
		return "notifications/message"
	case "notifications/tools/list_changed":
		return "notifications/tools/list_changed"
	case "notifications/prompts/list_changed":
		return "notifications/prompts/list_changed"
	case "notifications/resources/list_changed":
		return "notifications/resources/list_changed"
	case "notifications/resources/updated":
		return "notifications/resources/updated"
	case "notifications/roots/list_changed":
		return "notifications/roots/list_changed"
	case "notifications/tasks/status":
		return "notifications/tasks/status"
	case "notifications/elicitation/complete":
		return "notifications/elicitation/complete"
	}
	return ""
}

// MethodIs reports whether the method equals name without allocating.
func (m Message) MethodIs(name string) bool {
	v := m.method.of(m.raw)
	if v == nil {
		return false
	}
	exact, _ := keyMatch(v[1:len(v)-1], name)
	return exact
}

// Params returns the raw params value, or nil if absent.
func (m Message) Params() []byte { return m.params.of(m.raw) }

// ParamsSpan returns where the params value lies in Raw (Raw()[start:end]); ok is false if absent.
func (m Message) ParamsSpan() (start, end int, ok bool) {
	return int(m.params.start), int(m.params.end), m.params.ok()
}

// Clone returns the message with bytes of its own.
func (m Message) Clone() Message {
	m.raw = append([]byte(nil), m.raw...)
	return m
}

// DuplicateMember reports the first member name that params holds twice in one of its objects, at any depth,
// compared after unescaping. Such a request must be refused: a peer decoding it keeps one of the two, and which
// one the gateway checked is not the peer's business to guess.
func (m Message) DuplicateMember() (name string, found bool) {
	if !m.dup.ok() {
		return "", false
	}
	return keyString(m.dup.of(m.raw), true), true
}

// Result returns the raw result value, or nil if absent.
func (m Message) Result() []byte { return m.result.of(m.raw) }

// Error returns the raw error object, or nil if absent.
func (m Message) Error() []byte { return m.errv.of(m.raw) }

// ErrorCode returns the integer "code" of an error response; ok is false if
// the message has no error or the code is not an integer that fits an int.
func (m Message) ErrorCode() (int, bool) {
	e := m.Error()
	if e == nil {
		return 0, false
	}
	s, end, ok := Lookup(e, "code")
	if !ok {
		return 0, false
	}
	n, ok := ParseInt(e[s:end])
	if !ok || int64(int(n)) != n {
		return 0, false
	}
	return int(n), true
}

package upstreamauth

import "strings"

// Challenge is what a Bearer (or DPoP) challenge of a WWW-Authenticate header
// says (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1).
type Challenge struct {
	// ResourceMetadata is the resource_metadata parameter: the URL of the
	// protected-resource metadata ("" when absent).
	ResourceMetadata string
	// Scopes is the scope parameter, split on spaces.
	Scopes []string
	// Error is the error parameter ("invalid_token", "insufficient_scope"…).
	Error string
	// ErrorDescription is the error_description parameter.
	ErrorDescription string
	// DPoP is whether the header has a DPoP challenge (RFC 9449 §7.1): the
	// resource takes DPoP-bound tokens.
	DPoP bool
}

// ParseChallenge finds the first Bearer challenge in a WWW-Authenticate
// value, else the first DPoP challenge (RFC 9449 §7.1: same parameters), and
// reports whether there was one. Several header fields are one list: join
// them with ", " first (RFC 9110 §5.3). The parser is lenient, as a client
// should be with what servers send: the scheme and parameter names are
// case-insensitive, values may be tokens or quoted strings with escapes,
// spaces around "=" and empty list elements are skipped, other schemes and
// their token68 or parameters are passed over, and an unterminated quoted
// string runs to the end. A repeated parameter keeps its first value.
func ParseChallenge(header string) (Challenge, bool) {
	dpop, isDPoP := parseChallenge(header, "dpop")
	if ch, ok := parseChallenge(header, "bearer"); ok {
		ch.DPoP = isDPoP
		return ch, true
	}
	dpop.DPoP = isDPoP
	return dpop, isDPoP
}

// parseChallenge is ParseChallenge for one scheme.
func parseChallenge(header, scheme string) (Challenge, bool) {
	p := challengeParser{s: header}
	var (
		ch       Challenge
		found    bool
		inBearer bool
		seen     = map[string]bool{}
	)
	for {
		p.skip(" \t,")
		if p.done() {
			break
		}
		tok := p.token()
		if tok == "" {
			// A stray character no grammar allows ('=' or '"' at the start
			// of an element): pass over it.
			p.i++
			continue
		}
		p.skip(" \t")
		if p.peek() != '=' {
			// A token not followed by "=" opens a new challenge (or is a
			// token68, which cannot be told apart here and is harmless: it
			// is not a Bearer scheme followed by Bearer parameters).
			if found {
				// The first Bearer challenge is the one used.
				inBearer = false
				continue
			}
			inBearer = strings.EqualFold(tok, scheme)
			found = inBearer
			continue
		}
		p.i++ // '='
		if r := p.peek(); r == '=' || r == ',' || r == 0 {
			// token68 padding ("abc==", "abc="): not a parameter.
			p.skip("=")
			continue
		}
		p.skip(" \t")
		var val string
		if p.peek() == '"' {
			val = p.quoted()
		} else {
			val = p.until(" \t,")
		}
		name := strings.ToLower(tok)
		if !inBearer || seen[name] {
			continue
		}
		seen[name] = true
		switch name {
		case "resource_metadata":
			ch.ResourceMetadata = val
		case "scope":
			ch.Scopes = strings.Fields(val)
		case "error":
			ch.Error = val
		case "error_description":
			ch.ErrorDescription = val
		}
	}
	return ch, found
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

func (p *challengeParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *challengeParser) skip(set string) {
	for !p.done() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads up to a space, comma, '=' or '"': wider than RFC 9110's tchar,
// so that a token68 ("abc/def") is read whole.
func (p *challengeParser) token() string {
	return p.until(" \t,=\"")
}

func (p *challengeParser) until(stop string) string {
	start := p.i
	for !p.done() && strings.IndexByte(stop, p.s[p.i]) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string at '"', undoing quoted-pairs (RFC 9110
// §5.6.4).
func (p *challengeParser) quoted() string {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String()
		case c == '\\' && !p.done():
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ServerCard is the serverCard: block (issue 19, experimental): the gateway serves the server card of SEP-2127
// (MCP Server Cards), a document that describes it to clients before they connect, at
// /.well-known/mcp/server-card, and each endpoint's at /.well-known/mcp/server-card/<endpoint>. `serverCard:
// true` is the block with its defaults.
type ServerCard struct {
	// Name is the card's name: reverse-DNS, with exactly one slash ("com.example.mcp/switchboard"). An
	// endpoint's card is named Name + "-" + the endpoint's name. Defaulted from publicURL's host, reversed, and
	// "/switchboard" ("localhost/switchboard" for an IP address or a single-label host).
	Name string
	// Title is the card's display name ("" = the gateway's own title).
	Title string
	// Description says what the gateway serves ("" = a sentence naming the gateway, or the endpoint).
	Description string
	// Primitives lists the tools, prompts and resources in the cards. Only without auth: with auth the catalog
	// depends on the caller, and a card is public, so it would list what some callers may not see (the card
	// then leaves them out, and the file gets a warning).
	Primitives bool
}

// Limits of the card's fields, from the server card schema: a name of 3 to 200 characters, a title and a
// description of at most 100.
const (
	maxCardName = 200
	maxCardText = 100
)

// cardNameRE is the schema's pattern of a card's name: "exactly one forward slash separating namespace from
// server name".
var cardNameRE = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

func serverCardFields() []field { return fieldsOf(serverCardTable()) }

// serverCardTable is how the serverCard: block's keys are read.
func serverCardTable() []blockField[ServerCard] {
	text := func(key, doc string, dst func(*ServerCard) *string) blockField[ServerCard] {
		return blockField[ServerCard]{field: field{key: key, typ: tString, doc: fmt.Sprintf("%s, at most %d characters.", doc, maxCardText)},
			read: func(p *parser, f pair, path string, sc *ServerCard) {
				if v, ok := p.scalar(f.val, path); ok {
					if n := len([]rune(v)); n == 0 || n > maxCardText {
						p.errorf(resolve(f.val), path, "must be 1 to %d characters, not %d", maxCardText, n)
					}
					*dst(sc) = v
				}
			}}
	}
	return []blockField[ServerCard]{
		{field: field{key: "name", typ: tString, doc: "The card's reverse-DNS name with one slash, such as com.example.mcp/switchboard (default: from publicURL's host)."},
			read: func(p *parser, f pair, path string, sc *ServerCard) {
				if v, ok := p.scalar(f.val, path); ok {
					if msg := checkCardName(v); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
					sc.Name = v
				}
			}},
		text("title", "The card's display name", func(sc *ServerCard) *string { return &sc.Title }),
		text("description", "What the gateway serves", func(sc *ServerCard) *string { return &sc.Description }),
		{field: field{key: "primitives", typ: tBool, def: "false", doc: "Lists the tools, prompts and resources in the cards (only without auth)."},
			read: func(p *parser, f pair, path string, sc *ServerCard) { sc.Primitives, _ = p.boolean(f.val, path) }},
	}
}

// readServerCard reads serverCard: true, false, or a mapping of serverCardKeys.
func readServerCard(p *parser, key string, f pair, t *topLevel) {
	n := resolve(f.val)
	if n.Kind == yaml.ScalarNode {
		if on, ok := p.boolean(n, key); ok && on {
			t.cfg.ServerCard = &ServerCard{}
			t.serverCardKey = f.key
		}
		return
	}
	sc := &ServerCard{}
	o, ok := readBlock(p, f.val, key, map[string]string{
		"enabled": "the block itself turns the card on (serverCard: true for the defaults); remove enabled",
		"url":     "the card's URLs follow from publicURL; remove url",
		"tools":   "did you mean \"primitives\" (list the tools, prompts and resources; only without auth)?",
	}, serverCardTable(), sc)
	if !ok {
		return
	}
	t.cfg.ServerCard, t.serverCardKey = sc, f.key
	if f, ok := o.get("primitives"); ok {
		t.serverCardPrimitives = f.key
	}
}

// checkServerCard runs once publicURL and auth are known: the card's URLs are built from publicURL, and the
// default name from its host.
func checkServerCard(p *parser, t *topLevel) {
	sc := t.cfg.ServerCard
	if sc == nil {
		return
	}
	if t.cfg.PublicURL == "" {
		p.errorf(t.serverCardKey, "serverCard", "needs publicURL: the card tells clients the gateway's URLs (/mcp and /mcp/<endpoint>), which are built from it; set publicURL, such as https://mcp.example.com")
		return
	}
	if sc.Name == "" {
		sc.Name = defaultCardName(t.cfg.PublicURL)
	}
	if sc.Primitives && t.cfg.Auth != nil {
		p.warnf(t.serverCardPrimitives, "serverCard.primitives", "is ignored with auth: the catalog depends on the caller, and a card is public; the cards list capabilities and URLs only")
		sc.Primitives = false
	}
}

// checkCardName returns why a card name is invalid, or "". The longest endpoint name and its "-" must fit too.
func checkCardName(v string) string {
	switch {
	case !cardNameRE.MatchString(v):
		return "must be reverse-DNS with exactly one slash, such as com.example.mcp/switchboard (letters, digits, '.' and '-' before the slash; also '_' after it)"
	case len(v) < 3 || len(v)+1+MaxEndpointNameLen > maxCardName:
		return fmt.Sprintf("must be 3 to %d characters, so that every endpoint's card name (name-<endpoint>) fits in %d", maxCardName-1-MaxEndpointNameLen, maxCardName)
	}
	return ""
}

// defaultCardName is the reverse-DNS name of publicURL's host, such as com.example.mcp/switchboard for
// https://mcp.example.com.
func defaultCardName(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil {
		return "localhost/switchboard"
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	labels := strings.Split(host, ".")
	if net.ParseIP(host) != nil || len(labels) < 2 || !cardNameRE.MatchString(host+"/switchboard") {
		return "localhost/switchboard"
	}
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "/switchboard"
}

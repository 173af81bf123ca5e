package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Server cards (experimental; SEP-2127, "MCP Server Cards - HTTP Server Discovery via .well-known"): a public
// document that tells a client, before it connects, what the gateway is, where and how to connect (its remotes:
// URLs, protocol versions, whether it needs a token) and what it can do (its merged capabilities). "Servers using
// HTTP-based transports SHOULD provide their server card at /.well-known/mcp/server-card", and a host of several
// servers has "many Server Cards at .../.well-known/mcp/server-card/*": the gateway's own, and one per endpoint
// at /.well-known/mcp/server-card/<endpoint>.
//
// What a card reveals. "Server cards are publicly accessible by design", so with auth on a card holds what any
// client learns anyway on connecting (the 401 names the resource; initialize names the capabilities): no tools,
// prompts or resources, which differ per principal ("User-specific or session-specific data" must stay out, and
// listing the anonymous catalog would announce what some callers cannot see). Without auth every caller sees
// the same catalog, so ServerCard.Primitives may list it, as a caller would see it at that endpoint; the cards
// still say "listChanged": the lists are a snapshot.

// serverCardSchema is the schema URI of SEP-2127's card.
const serverCardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"

// serverCardMaxAge is how long a client may cache a card. The SEP suggests an hour; the catalog behind a card
// changes as upstreams come and go, so five minutes.
const serverCardMaxAge = 5 * time.Minute

// ServerCard configures the server cards; Options.ServerCard nil serves none (their paths answer 404).
type ServerCard struct {
	// PublicURL is the gateway's canonical external URL ("https://mcp.example.com"): the cards' remotes are its
	// /mcp and /mcp/<endpoint>.
	PublicURL string
	// Name is the gateway card's reverse-DNS name ("com.example.mcp/switchboard"); an endpoint's card is named
	// Name + "-" + the endpoint's name.
	Name string
	// Title and Description are shown by clients; "" means the gateway's title, and a sentence naming the
	// gateway or the endpoint.
	Title, Description string
	// Primitives lists the tools, prompts and resources in the cards, as an anonymous caller sees them at each
	// endpoint. Ignored when Options.Auth is set.
	Primitives bool
}

// serverCardDoc is a card, in the SEP's field order.
type serverCardDoc struct {
	Schema       string             `json:"$schema"`
	Name         string             `json:"name"`
	Version      string             `json:"version"`
	Description  string             `json:"description"`
	Title        string             `json:"title,omitempty"`
	Remotes      []cardRemote       `json:"remotes"`
	Capabilities json.RawMessage    `json:"capabilities"`
	Resources    *[]json.RawMessage `json:"resources,omitempty"`
	Tools        *[]json.RawMessage `json:"tools,omitempty"`
	Prompts      *[]json.RawMessage `json:"prompts,omitempty"`
}

// cardRemote is one way to connect: "Metadata helpful for making HTTP-based connections to this MCP server".
type cardRemote struct {
	Type                      string    `json:"type"`
	URL                       string    `json:"url"`
	SupportedProtocolVersions []string  `json:"supportedProtocolVersions"`
	Authentication            *cardAuth `json:"authentication,omitempty"`
}

// cardAuth is a remote's "Authentication requirements".
type cardAuth struct {
	Required bool     `json:"required"`
	Schemes  []string `json:"schemes"`
}

// serverCards serves the server cards (Options.ServerCard).
type serverCards struct {
	card     *ServerCard
	offer    Offering
	sessions Sessions // lists the catalog for ServerCard.Primitives
	who      callers
	limits   *callerLimits
	authOn   bool
	initWait time.Duration
	log      *slog.Logger
}

// route serves the cards on mux: GET and HEAD, and the CORS preflight.
func (c *serverCards) route(mux chi.Router) {
	for _, p := range []string{"/.well-known/mcp/server-card", "/.well-known/mcp/server-card/{endpoint}"} {
		mux.Get(p, c.serve)
		mux.Head(p, c.serve)
		mux.Options(p, c.serve)
	}
}

// serve answers a card request.
func (c *serverCards) serve(w http.ResponseWriter, r *http.Request) {
	endpoint := chi.URLParam(r, "endpoint")
	if endpoint != "" && !c.offer.HasEndpoint(endpoint) {
		http.NotFound(w, r)
		return
	}
	// "Discovery endpoints MUST include appropriate CORS headers to allow browser-based clients": a card is
	// public and read-only, so any origin may read it.
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// "Servers SHOULD implement rate limiting on .well-known/mcp/server-card endpoints": the caller's rate, as for
	// any request (cards are not calls, so the bound on calls in flight does not apply).
	if _, refused := c.limits.check(r.Context(), c.limits.limitKey(r), jsonrpc.Message{}); refused != nil {
		h.Set("Retry-After", strconv.Itoa(max(1, int((refused.retry+time.Second-1)/time.Second))))
		http.Error(w, refused.msg, http.StatusTooManyRequests)
		return
	}
	body, err := c.build(r.Context(), endpoint)
	if err != nil {
		c.log.Warn("server card not built", "endpoint", endpoint, "err", err)
		http.Error(w, "the server card cannot be built right now; retry shortly", http.StatusServiceUnavailable)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(serverCardMaxAge/time.Second)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// build is the card of the gateway (endpoint "") or of one endpoint.
func (c *serverCards) build(ctx context.Context, endpoint string) ([]byte, error) {
	sc := c.card
	var info struct {
		Title   string `json:"title"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(c.offer.ServerInfo(), &info); err != nil {
		return nil, fmt.Errorf("reading the gateway's server info: %w", err)
	}
	// As for initialize and server/discover: a card read right after start shows the whole catalog.
	wctx, cancel := context.WithTimeout(ctx, c.initWait)
	_ = c.sessions.WaitReady(wctx)
	cancel()
	doc := serverCardDoc{
		Schema: serverCardSchema, Name: sc.Name, Version: info.Version, Description: sc.Description, Title: sc.Title,
		Capabilities: c.offer.Capabilities(),
	}
	if doc.Title == "" {
		doc.Title = info.Title
	}
	if doc.Description == "" {
		doc.Description = "Switchboard MCP gateway: the MCP servers behind it at one URL"
	}
	base, path, ssePath := strings.TrimSuffix(sc.PublicURL, "/"), "/mcp", "/sse"
	if endpoint != "" {
		doc.Name += "-" + endpoint
		path = "/mcp/" + endpoint
		ssePath = path + "/sse"
		if sc.Description == "" {
			doc.Description = "Switchboard MCP gateway: its " + endpoint + " endpoint"
		}
	}
	var legacy []string
	for _, v := range protocol.Supported() {
		if protocol.SupportedLegacy(v) {
			legacy = append(legacy, v)
		}
	}
	var auth *cardAuth
	if c.authOn {
		// An OAuth 2.1 resource server: bearer tokens, found through RFC 9728 metadata and the 401 challenge.
		auth = &cardAuth{Required: true, Schemes: []string{"bearer", "oauth2"}}
	}
	doc.Remotes = []cardRemote{
		{Type: "streamable-http", URL: base + path, SupportedProtocolVersions: protocol.Supported(), Authentication: auth},
		// The deprecated HTTP+SSE transport is served too, for 2024-11-05 clients.
		{Type: "sse", URL: base + ssePath, SupportedProtocolVersions: legacy, Authentication: auth},
	}
	if sc.Primitives && !c.authOn {
		lists, err := c.lists(ctx, endpoint)
		if err != nil {
			return nil, err
		}
		doc.Tools, doc.Prompts, doc.Resources = &lists[0], &lists[1], &lists[2]
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the server card: %w", err)
	}
	return append(b, '\n'), nil
}

// cardListTimeout bounds listing the catalog for a card.
const cardListTimeout = 10 * time.Second

// lists lists the tools, prompts and resources an anonymous caller sees at the endpoint, every page, as a
// 2026-07-28 client without capabilities would.
func (c *serverCards) lists(ctx context.Context, endpoint string) ([3][]json.RawMessage, error) {
	var lists [3][]json.RawMessage
	ctx, cancel := context.WithTimeout(ctx, cardListTimeout)
	defer cancel()
	who := c.who.identify(ctx)
	sess := c.sessions.PooledSession(routing.SessionParams{
		Capabilities: json.RawMessage(`{}`), Principal: who.Key, Allow: who.Allow, Context: who.Context, Endpoint: endpoint,
	})
	for i, l := range []struct{ method, key string }{{"tools/list", "tools"}, {"prompts/list", "prompts"}, {"resources/list", "resources"}} {
		items, err := c.listAll(ctx, sess, l.method, l.key)
		if err != nil {
			return lists, err
		}
		lists[i] = items
	}
	return lists, nil
}

// maxCardPages bounds the pages listed for a card: a cursor that never ends must not hold the request.
const maxCardPages = 1000

// listAll asks sess for every page of a list.
func (c *serverCards) listAll(ctx context.Context, sess *routing.Session, method, key string) ([]json.RawMessage, error) {
	items := []json.RawMessage{}
	cursor := ""
	for range maxCardPages {
		params := []byte(`{}`)
		if cursor != "" {
			params = append(append([]byte(`{"cursor":`), jsonrpc.AppendQuote(nil, cursor)...), '}')
		}
		m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, []byte(`"server-card"`), method, params))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		out := c.sessions.NewStream(1, 0)
		sess.HandleRequest(ctx, m, out)
		var answer []byte
		for answer == nil {
			msg, final, ok := out.Next(ctx)
			if !ok {
				return nil, fmt.Errorf("%s: no answer: %w", method, context.Cause(ctx))
			}
			if final {
				answer = msg
			}
		}
		var page struct {
			Result map[string]json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(answer, &page); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if page.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, page.Error.Message)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(page.Result[key], &got); err != nil {
			return nil, fmt.Errorf("%s: result.%s: %w", method, key, err)
		}
		items = append(items, got...)
		cursor = ""
		if next, ok := page.Result["nextCursor"]; ok {
			_ = json.Unmarshal(next, &cursor)
		}
		if cursor == "" {
			return items, nil
		}
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxCardPages)
}

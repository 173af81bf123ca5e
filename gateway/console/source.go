package console

import (
	"context"
	"strconv"
	"time"
)

// Source is the gateway as the console sees it: everything a page shows and
// every action a button takes. The gateway implements it with an adapter
// over its router, store, grants, auditor and config; the console holds no
// state of its own, so any replica serves any page.
//
// Every method is called with the request's context. An error is shown to
// the admin as a short failure message and logged; it must hold no secret.
// The actions take by, the admin's subject, so the gateway can record who
// acted.
type Source interface {
	// Overview is the gateway's state now: its upstreams with their recent
	// metrics, sessions, running tasks and replicas.
	Overview(ctx context.Context) (Overview, error)
	// Endpoints lists the endpoints' names, in the order the catalog page
	// offers them; the first is the default.
	Endpoints(ctx context.Context) ([]string, error)
	// Catalog is what endpoint serves: every tool, prompt and resource. An
	// unknown endpoint is ErrNotFound.
	Catalog(ctx context.Context, endpoint string) (Catalog, error)
	// Search runs endpoint's own tool search on query, as a model calling
	// the search tool would, and gives what the model would get.
	Search(ctx context.Context, endpoint, query string) (SearchResult, error)

	// Pins lists the definitions that differ from their pins (withheld or
	// served changed), with both definitions' text when known.
	Pins(ctx context.Context) ([]PinDrift, error)
	// Approve accepts one changed definition, the one whose hash is
	// ref.Seen (as the admin API's approve does, writing the lock file). A
	// definition that changed again since the page showed it is ErrStale;
	// one no longer drifting is ErrNotFound.
	Approve(ctx context.Context, by string, ref PinRef) error
	// ApproveAll accepts every changed definition and says how many.
	ApproveAll(ctx context.Context, by string) (int, error)

	// Connections lists each user-oauth upstream with the people connected
	// to it.
	Connections(ctx context.Context) ([]UpstreamConnections, error)
	// Revoke revokes and forgets subject's grant for upstream.
	Revoke(ctx context.Context, by, upstream, subject string) error
	// RevokeAll revokes every grant for upstream and says how many.
	RevokeAll(ctx context.Context, by, upstream string) (int, error)

	// Audit gives the latest audit events that match filter, newest first,
	// at most filter.Limit of them.
	Audit(ctx context.Context, filter AuditFilter) ([]AuditEvent, error)
	// VerifyChain checks the audit log's hash chains.
	VerifyChain(ctx context.Context) (ChainState, error)

	// Config is the running configuration, redacted, and the last reload's
	// result.
	Config(ctx context.Context) (ConfigView, error)
	// Reload re-reads the configuration file and applies it, as SIGHUP and
	// the admin API's reload do, and gives the result (a reload refused for
	// its problems is a ReloadResult with OK false, not an error).
	Reload(ctx context.Context, by string) (ReloadResult, error)
}

// Overview is the gateway's state for the overview page.
type Overview struct {
	// Replica names the replica that answered; Replicas lists every live
	// one (empty without a shared store).
	Replica  string
	Replicas []Replica
	// Sessions counts the client sessions open, RunningTasks the tasks not
	// yet finished, across replicas when the store says (-1 when the
	// gateway cannot count them: the page says so).
	Sessions     int
	RunningTasks int
	// Window is how far back the upstreams' rates and latencies look.
	Window time.Duration
	// Upstreams lists every configured upstream.
	Upstreams []UpstreamStatus
}

// Replica is one gateway process sharing the store.
type Replica struct {
	ID       string
	Address  string
	LastSeen time.Time
}

// UpstreamStatus is one upstream on the overview page.
type UpstreamStatus struct {
	Name string
	// State is the router's word: connecting, ready, down, closed or
	// drained.
	State string
	// Era is the protocol era the gateway speaks with it and its version,
	// e.g. "modern 2026-03-26" or "legacy 2025-06-18"; "" before it is known.
	Era string
	// Transport is stdio, http or sse.
	Transport string
	Restarts  int
	// Error is the last error; it must hold no secret.
	Error string
	// CallsPerMinute, ErrorRate (0 to 1), P50 and P99 are from the
	// gateway's own metrics over Overview.Window; Calls counts the calls in
	// it (no call: the rates and latencies mean nothing and are not shown).
	Calls          int
	CallsPerMinute float64
	ErrorRate      float64
	P50, P99       time.Duration
}

// Catalog is what one endpoint serves.
type Catalog struct {
	Endpoint string
	// Search is true when the endpoint is in search mode: a model sees the
	// search tool and finds the others through it.
	Search bool
	Items  []CatalogItem
}

// CatalogItem is one tool, prompt or resource of an endpoint.
type CatalogItem struct {
	// Kind is tool, prompt, resource or template.
	Kind string
	// Exposed is the name (or URI) clients see.
	Exposed string
	// Upstream and Original say where it comes from: the upstream and its
	// name for it ("" for the gateway's own, such as the search tool).
	Upstream string
	Original string
	// Override names the override or preset applied ("" for none).
	Override string
	// Pin is the pin state: pinned, new, changed, withheld or "" when
	// pinning is off.
	Pin string
	// Task is the task support: forbidden, optional or required ("" for
	// items that are not tools).
	Task string
	// Description is the description clients see.
	Description string
}

// SearchResult is what a model would get from an endpoint's search.
type SearchResult struct {
	Query string
	Hits  []SearchHit
	// Text is the search tool's answer as the model reads it (its text
	// content); "" when the endpoint has no search tool.
	Text string
}

// SearchHit is one tool a search found.
type SearchHit struct {
	Exposed     string
	Score       float64
	Description string
}

// PinDrift is one definition that differs from its pin.
type PinDrift struct {
	// Ref names the definition and the hash seen; the approve form sends it
	// back.
	Ref PinRef
	// Exposed is the name clients see.
	Exposed string
	// Pinned is the pinned hash ("" for an item new in an upstream the lock
	// file pins).
	Pinned string
	// Withheld: clients do not get it until it is approved.
	Withheld bool
	// PinnedText and SeenText are the definitions as indented JSON, for the
	// side-by-side diff; PinnedText is "" when the pin keeps only a hash.
	PinnedText string
	SeenText   string
}

// PinRef names a changed definition and the hash the admin reviewed.
type PinRef struct {
	Upstream string
	// Kind is tool or prompt.
	Kind string
	// Name is the upstream's name for it.
	Name string
	// Seen is the hash of the definition reviewed.
	Seen string
}

// UpstreamConnections is one user-oauth upstream and who is connected to it.
type UpstreamConnections struct {
	Upstream string
	People   []Connection
}

// Connection is one person's grant for an upstream.
type Connection struct {
	// Subject is the principal key (issuer "|" subject) Revoke takes; Name
	// is shown when set.
	Subject string
	Name    string
	Since   time.Time
	Expires time.Time
	Scopes  []string
}

// AuditFilter selects audit events; an empty field matches any.
type AuditFilter struct {
	Person   string
	Tool     string
	Outcome  string
	Endpoint string
	Limit    int
}

// AuditEvent is one audited call.
type AuditEvent struct {
	Time     time.Time
	Person   string
	Endpoint string
	Upstream string
	Method   string
	Tool     string
	// Outcome is ok, error, denied, refused, not_connected, cancelled or
	// timeout; Reason the rule behind a denial or refusal.
	Outcome  string
	Reason   string
	Duration time.Duration
}

// ChainState is the audit chain's verification.
type ChainState struct {
	// Checked is false when the gateway cannot read its audit log back (it
	// goes to a collector, say); Detail then says why.
	Checked bool
	// Intact: every stream verifies and nothing is malformed.
	Intact  bool
	Streams int
	Records int
	// Detail says what is wrong, or where the log is.
	Detail string
	At     time.Time
}

// ConfigView is the running configuration and the last reload.
type ConfigView struct {
	// Path is the configuration file; Text its running content with every
	// secret replaced (the gateway redacts; the console shows it as is).
	Path string
	Text string
	// LastReload is the last reload's result; nil when none has run.
	LastReload *ReloadResult
}

// ReloadResult is what a reload did.
type ReloadResult struct {
	At time.Time
	OK bool
	// Summary says what changed ("2 upstreams added, 1 endpoint changed") or
	// why nothing did.
	Summary  string
	Problems []Problem
}

// Problem is one thing wrong in the configuration, where it is.
type Problem struct {
	File      string
	Line, Col int
	Message   string
}

// Where is the problem's position as file:line:col (file:line without a
// column, file alone without a line).
func (p Problem) Where() string {
	switch {
	case p.Line <= 0:
		return p.File
	case p.Col <= 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

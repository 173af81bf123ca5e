package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
)

// AuditEvent describes one call through the gateway. It has no field for
// arguments or results on purpose: they may hold personal data and secrets,
// and an audit log is kept long and read widely.
type AuditEvent struct {
	// Principal is the caller (nil without auth).
	Principal *Principal
	// Session is the gateway's session id, or "" (it is logged: it is not a
	// credential once sessions are bound to principals).
	Session string
	// Endpoint is the endpoint the call came through ("" for the whole catalog).
	Endpoint string
	// Upstream is the upstream's name.
	Upstream string
	// Method is the JSON-RPC method (tools/call, resources/read...).
	Method string
	// Tool is the tool or prompt name, or the resource URI, as the client
	// wrote it (the exposed name).
	Tool string
	// Outcome is ok, error, denied (by the policy), refused (by another of the
	// gateway's rules), not_connected, cancelled or timeout.
	Outcome string
	// Reason is the rule behind a denied or refused outcome ("policy",
	// "outside the endpoint", "preset argument sent", ...); "" otherwise.
	Reason string
	// Code is the JSON-RPC error code when Outcome is error (0 otherwise).
	Code int
	// Duration is from the request's arrival to its answer.
	Duration time.Duration
	// DefinitionHash is the pin hash ("sha256:…") of the called tool's or
	// prompt's definition, so the record says which definition ran; "" when
	// unknown or not a tool or prompt.
	DefinitionHash string
	// Script is the id of the code-mode run whose script made the call, and
	// of run_script's own record; "" for a client's own call.
	Script string
}

// Auditor logs audit events, each chained to the one before it so that an
// altered, deleted or reordered record can be found (see AuditChain).
//
// Every record carries stream (this Auditor's id: the host name and a random
// part, new with every Auditor, so each process and each replica writes its
// own chain), seq (1, 2, 3… within the stream), prev (the hash of the
// stream's previous record, "" for seq 1) and hash: "sha256:" and the hex
// SHA-256 of the record's canonical form, which VerifyAuditLog recomputes
// from the logged JSON line alone. Records are emitted in chain order.
//
// For the chain to verify, the logger's handler must write the record as
// slog.JSONHandler does, adding no attributes (no Logger.With) and
// rewriting none (no ReplaceAttr): the hash covers every key of the line.
type Auditor struct {
	log    *slog.Logger
	stream string

	// mu serialises the chain: a record's seq and prev are taken and the
	// record written under it, so the log holds records in chain order.
	mu   sync.Mutex
	seq  uint64
	prev string
	buf  []byte      // the canonical form, reused under mu
	keys []slog.Attr // the attributes sorted by key, reused under mu
}

// NewAuditor returns an auditor writing to l (nil = slog.Default()), whose
// stream is named after the host. Give it its own handler to send audit
// events elsewhere than the gateway's log.
func NewAuditor(l *slog.Logger) *Auditor {
	host, _ := os.Hostname() // "" when unknown: the random part still tells streams apart
	return NewStreamAuditor(l, host)
}

// NewStreamAuditor is NewAuditor with the replica's name for the stream id
// ("" = the random part alone).
func NewStreamAuditor(l *slog.Logger, replica string) *Auditor {
	if l == nil {
		l = slog.Default()
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read does not fail
	stream := hex.EncodeToString(id[:])
	if r := sanitize(replica, 128); r != "" {
		stream = r + "/" + stream
	}
	return &Auditor{log: l, stream: stream}
}

// Stream is the id of the auditor's chain, the stream field of its records.
func (a *Auditor) Stream() string {
	if a == nil {
		return ""
	}
	return a.stream
}

// Call logs e as one "audit" event at level Info (Warn when denied). A nil
// *Auditor does nothing.
func (a *Auditor) Call(ctx context.Context, e AuditEvent) {
	if a == nil {
		return
	}
	level := slog.LevelInfo
	if e.Outcome == "denied" || e.Outcome == "refused" {
		level = slog.LevelWarn
	}
	if !a.log.Handler().Enabled(ctx, level) {
		return // the record would be dropped: spare building it (a call's, on the hot path)
	}
	attrs := make([]slog.Attr, 0, 16)
	if p := e.Principal; p != nil {
		attrs = append(attrs, slog.String("sub", sanitize(p.Subject, 256)), slog.String("iss", sanitize(p.Issuer, 256)))
	} else {
		attrs = append(attrs, slog.String("sub", ""))
	}
	if e.Session != "" {
		attrs = append(attrs, slog.String("session", sanitize(e.Session, 128)))
	}
	if e.Endpoint != "" {
		attrs = append(attrs, slog.String("endpoint", sanitize(e.Endpoint, 64)))
	}
	attrs = append(attrs,
		slog.String("upstream", sanitize(e.Upstream, 128)),
		slog.String("method", sanitize(e.Method, 128)),
		slog.String("tool", sanitize(e.Tool, 512)),
		slog.String("outcome", sanitize(e.Outcome, 32)),
	)
	if e.Reason != "" {
		attrs = append(attrs, slog.String("reason", sanitize(e.Reason, 256)))
	}
	if e.Code != 0 {
		attrs = append(attrs, slog.Int("code", e.Code))
	}
	if e.DefinitionHash != "" {
		attrs = append(attrs, slog.String("definitionHash", sanitize(e.DefinitionHash, 128)))
	}
	if e.Script != "" {
		attrs = append(attrs, slog.String("script", sanitize(e.Script, 64)))
	}
	attrs = append(attrs, slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000))
	a.emit(ctx, level, attrs)
}

// DefinitionEvent describes what pinning found or did about one tool or
// prompt definition of an upstream: it changed since it was pinned, an admin
// approved it, or it holds invisible characters.
type DefinitionEvent struct {
	// Upstream, Kind (tool or prompt) and Name (the upstream's own name)
	// identify the definition.
	Upstream, Kind, Name string
	// Action is withheld or served (a change found), approved, or invisible.
	Action string
	// Pinned and Seen are the pinned hash and the hash of the definition the
	// upstream offers now.
	Pinned, Seen string
	// Invisible lists the invisible characters found, as U+XXXX.
	Invisible []string
}

// Definition logs e as one "audit" event, at level Warn for a change withheld
// or served and for invisible characters, Info for an approval. A nil
// *Auditor does nothing.
func (a *Auditor) Definition(ctx context.Context, e DefinitionEvent) {
	if a == nil {
		return
	}
	attrs := make([]slog.Attr, 0, 11)
	attrs = append(attrs,
		slog.String("upstream", sanitize(e.Upstream, 128)),
		slog.String("kind", sanitize(e.Kind, 16)),
		slog.String("name", sanitize(e.Name, 512)),
		slog.String("outcome", "definition_"+sanitize(e.Action, 32)),
	)
	if e.Pinned != "" {
		attrs = append(attrs, slog.String("pinned", sanitize(e.Pinned, 128)))
	}
	if e.Seen != "" {
		attrs = append(attrs, slog.String("seen", sanitize(e.Seen, 128)))
	}
	if len(e.Invisible) > 0 {
		attrs = append(attrs, slog.String("invisible", sanitize(strings.Join(e.Invisible, " "), 512)))
	}
	level := slog.LevelWarn
	if e.Action == "approved" {
		level = slog.LevelInfo
	}
	a.emit(ctx, level, attrs)
}

// sanitize bounds a client-supplied string and drops control characters,
// so it cannot forge log lines or flood the log.
func sanitize(s string, max int) string {
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

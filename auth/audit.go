package auth

import (
	"context"
	"log/slog"
	"strings"
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
	// Upstream is the upstream's name.
	Upstream string
	// Method is the JSON-RPC method (tools/call, resources/read...).
	Method string
	// Tool is the tool or prompt name, or the resource URI, as the client
	// wrote it (the exposed name).
	Tool string
	// Outcome is ok, error, denied, cancelled or timeout.
	Outcome string
	// Code is the JSON-RPC error code when Outcome is error (0 otherwise).
	Code int
	// Duration is from the request's arrival to its answer.
	Duration time.Duration
}

// Auditor logs audit events.
type Auditor struct {
	log *slog.Logger
}

// NewAuditor returns an auditor writing to l (nil = slog.Default()). Give it
// its own handler to send audit events elsewhere than the gateway's log.
func NewAuditor(l *slog.Logger) *Auditor {
	if l == nil {
		l = slog.Default()
	}
	return &Auditor{log: l}
}

// Call logs e as one "audit" event at level Info (Warn when denied). A nil
// *Auditor does nothing.
func (a *Auditor) Call(ctx context.Context, e AuditEvent) {
	if a == nil {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	if p := e.Principal; p != nil {
		attrs = append(attrs, slog.String("sub", sanitize(p.Subject, 256)), slog.String("iss", sanitize(p.Issuer, 256)))
	} else {
		attrs = append(attrs, slog.String("sub", ""))
	}
	if e.Session != "" {
		attrs = append(attrs, slog.String("session", sanitize(e.Session, 128)))
	}
	attrs = append(attrs,
		slog.String("upstream", sanitize(e.Upstream, 128)),
		slog.String("method", sanitize(e.Method, 128)),
		slog.String("tool", sanitize(e.Tool, 512)),
		slog.String("outcome", sanitize(e.Outcome, 32)),
	)
	if e.Code != 0 {
		attrs = append(attrs, slog.Int("code", e.Code))
	}
	attrs = append(attrs, slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000))
	level := slog.LevelInfo
	if e.Outcome == "denied" {
		level = slog.LevelWarn
	}
	a.log.LogAttrs(ctx, level, "audit", attrs...)
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
	attrs := []slog.Attr{
		slog.String("upstream", sanitize(e.Upstream, 128)),
		slog.String("kind", sanitize(e.Kind, 16)),
		slog.String("name", sanitize(e.Name, 512)),
		slog.String("outcome", "definition_"+sanitize(e.Action, 32)),
	}
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
	a.log.LogAttrs(ctx, level, "audit", attrs...)
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

package config

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// upstreamHints explain keys that people bring from other tools.
func upstreamHints() map[string]string {
	transport := "the transport follows from command (a local program over stdio) or url (a remote server over HTTP); remove it"
	return map[string]string{
		"type":      transport,
		"transport": transport,
		"cmd":       "did you mean \"command\"?",
		"envFile":   "env files are not supported; list the variables under env, using ${VAR} to take them from the gateway's environment",
	}
}

// modernVersion is the protocol version of the modern era, for messages.
const modernVersion = "2026-07-28"

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9-]+$`)
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
)

// upstreamSource is an upstream's strings as written, before expansion.
type upstreamSource struct {
	command, cwd, url string
	args              []string
}

// upMeta remembers where an upstream's settings are, for checks that need
// the whole file (duplicates, defaults that depend on other keys).
type upMeta struct {
	path                        string
	authzHeader                 *yaml.Node
	namePath                    string // path of the name: the key itself in the mcpServers form
	urlNode                     *yaml.Node
	node                        *yaml.Node
	nameNode, origName          *yaml.Node
	timeoutNode, prefixNode     *yaml.Node
	maxInstNode, idleNode       *yaml.Node
	prefixSet, maxInstSet       bool
	hasCommand, hasURL, headers bool
}

func logFields() []field { return fieldsOf(logTable()) }

// logTable is how the log: block's keys are read.
func logTable() []blockField[LogConfig] {
	return []blockField[LogConfig]{
		{field: field{key: "level", typ: tString, def: "info", enum: []string{"debug", "info", "warn", "warning", "error"}, doc: "The least level logged."},
			read: func(p *parser, f pair, path string, lc *LogConfig) {
				if v, ok := p.scalar(f.val, path); ok {
					levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn,
						"warning": slog.LevelWarn, "error": slog.LevelError}
					if l, ok := levels[strings.ToLower(v)]; ok {
						lc.Level = l
					} else {
						p.errorf(resolve(f.val), path, "%q is not a log level; use debug, info, warn or error", v)
					}
				}
			}},
		{field: field{key: "format", typ: tString, def: "text", enum: []string{"text", "json"}, doc: "text (key=value) or json (one object a line)."},
			read: func(p *parser, f pair, path string, lc *LogConfig) {
				if v, ok := p.scalar(f.val, path); ok {
					if v == "text" || v == "json" {
						lc.Format = v
					} else {
						p.errorf(resolve(f.val), path, "%q is not a log format; use text or json", v)
					}
				}
			}},
	}
}

// checkName returns why an upstream name is invalid, or "".
func checkName(v string) string {
	switch {
	case v == "":
		return "is empty; use lowercase letters, digits and '-', such as \"files\""
	case len(v) > MaxNameLen:
		return fmt.Sprintf("is %d characters; the limit is %d", len(v), MaxNameLen)
	case !nameRE.MatchString(v):
		msg := fmt.Sprintf("%q must match [a-z0-9-]+ (lowercase letters, digits and '-')", v)
		if s := normaliseName(v); s != "" {
			msg += fmt.Sprintf("; try %q", s)
		}
		return msg
	}
	return ""
}

// normaliseName turns a client's server name ("My Files") into a valid
// upstream name ("my-files"): lowercase, each run of other characters becomes
// one '-', trimmed, at most MaxNameLen characters. "" if nothing is left.
func normaliseName(s string) string {
	if nameRE.MatchString(s) && len(s) <= MaxNameLen {
		return s
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	out := b.String()
	if len(out) > MaxNameLen {
		out = strings.TrimRight(out[:MaxNameLen], "-")
	}
	return out
}

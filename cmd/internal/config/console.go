package config

import (
	"path/filepath"
	"strings"
)

// Console is the console: block (issue 36): the admin console in the browser
// at /console, on the main listener.
type Console struct {
	// Enabled serves /console. Who may use it is the gateway's auth: the
	// subjects of auth.browser.admins, or anyone on a loopback-only gateway
	// without auth.
	Enabled bool
	// AuditLog is the file the gateway's JSON log is collected in ("" for
	// none), which the audit page reads back and whose chain it verifies.
	// ${VAR} is expanded; a relative path is resolved against the config
	// file's directory.
	AuditLog string
}

func consoleFields() []field { return fieldsOf(consoleTable()) }

// consoleTable is how the console: block's keys are read.
func consoleTable() []blockField[Console] {
	return []blockField[Console]{
		{field: field{key: "enabled", typ: tBool, def: "false",
			doc: "Serves the admin console at /console: to auth.browser.admins, or to anyone on a loopback-only gateway without auth."},
			read: func(p *parser, f pair, path string, c *Console) { c.Enabled, _ = p.boolean(f.val, path) }},
		{field: field{key: "auditLog", typ: tString,
			doc: "The file the gateway's log (log.format: json) is collected in: the audit page reads its events back and verifies their chain; ${VAR} is expanded. Unset: the audit page has no events."},
			read: func(p *parser, f pair, path string, c *Console) {
				v, _, ok := p.expanded(f.val, path)
				switch {
				case !ok:
				case strings.TrimSpace(v) == "":
					p.errorf(resolve(f.val), path, "is empty; give the file the gateway's JSON log is written to, or remove the key")
				case strings.HasSuffix(v, "/") || strings.HasSuffix(v, string(filepath.Separator)):
					p.errorf(resolve(f.val), path, "%q names a directory; give the log file", v)
				default:
					c.AuditLog = resolveFile(p.file, v)
				}
			}},
	}
}

// readConsole reads the console: block.
func readConsole(p *parser, key string, f pair, t *topLevel) {
	readBlock(p, f.val, key, map[string]string{
		"enable":   "did you mean \"enabled\"?",
		"auditlog": "did you mean \"auditLog\"?",
	}, consoleTable(), &t.cfg.Console)
}

// writeConsole prints the console: block when it is on.
func (c *Config) writeConsole(w *lineWriter) {
	switch {
	case !c.Console.Enabled && c.Console.AuditLog == "":
	case c.Console.AuditLog == "":
		w.line("console: {enabled: %t}", c.Console.Enabled)
	default:
		w.line("console: {enabled: %t, auditLog: %s}", c.Console.Enabled, c.Console.AuditLog)
	}
}

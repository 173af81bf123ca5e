package upstream

import (
	"slices"
	"strings"
)

// The environment a stdio child gets: a short list of the gateway's variables, what the upstream lets through,
// and its own.

// inherited reports whether a child inherits the gateway's variable k: what a program needs to find its tools,
// its home, its language and its temporary files, and where TLS trust anchors live (paths, never secrets), plus
// what the upstream names in passthrough. Everything else in the gateway's environment (the cursor secret, client
// secrets, a Redis password) stays out of children: an MCP server's tools can read their environment and hand it
// to a client.
func inherited(k string, passthrough []string) bool {
	switch k {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "TERM", "LANG", "LANGUAGE",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS":
		return true
	}
	return strings.HasPrefix(k, "LC_") || envNamed(passthrough, k)
}

// childEnv builds a child's environment: the variables of base it inherits (a trailing '*' in passthrough matches
// a prefix), then overrides. Keys are applied in sorted order for reproducibility; exec.Cmd keeps the last
// value of a duplicated key, so overrides win.
func childEnv(base []string, passthrough []string, overrides map[string]string) []string {
	env := make([]string, 0, 16+len(overrides))
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if ok && inherited(k, passthrough) {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+overrides[k])
	}
	return env
}

// envNamed reports whether patterns name the variable k: exactly, or by a prefix ending in '*'.
func envNamed(patterns []string, k string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(k, prefix) || p == k {
			return true
		}
	}
	return false
}

package config

import (
	"fmt"
	"strings"
)

// expand replaces ${VAR}, ${VAR:-default} and ${env:VAR} (VS Code's
// spelling) with values from env, and $$ with a literal $. A lone $ not
// followed by { or $ is kept as is, so values such as "pa$word" need no
// escaping. The default is taken literally (not expanded again) and is used
// when the variable is unset or empty, as in the shell.
//
// It returns one message per bad reference; messages quote only what the file
// says, never an expanded value, because values are often secrets.
func expand(s string, env func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	var errs []string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			errs = append(errs, fmt.Sprintf("%q has no closing \"}\"; write \"$$\" for a literal \"$\"", s[i:]))
			b.WriteString(s[i:])
			break
		}
		ref := s[i+2 : i+2+end]
		whole := s[i : i+3+end]
		i += 2 + end
		name, def, hasDef := strings.Cut(ref, ":-")
		if n, ok := strings.CutPrefix(name, "env:"); ok {
			name = n
		}
		if !validVarName(name) {
			errs = append(errs, badRefMessage(whole, name))
			continue
		}
		v, ok := env(name)
		switch {
		case hasDef && v == "":
			b.WriteString(def)
		case ok:
			b.WriteString(v)
		default:
			errs = append(errs, fmt.Sprintf("environment variable %s is not set; set it, or give a default with ${%s:-value}", name, name))
		}
	}
	return b.String(), errs
}

func badRefMessage(whole, name string) string {
	switch {
	case strings.HasPrefix(name, "input:"):
		return fmt.Sprintf("%s is a VS Code input variable, which the gateway cannot prompt for; use an environment variable such as ${API_KEY}", whole)
	case name == "":
		return fmt.Sprintf("%s names no variable; write ${NAME}, or \"$$\" for a literal \"$\"", whole)
	}
	return fmt.Sprintf("%s: %q is not a variable name (letters, digits and _, not starting with a digit); write \"$$\" for a literal \"$\"", whole, name)
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

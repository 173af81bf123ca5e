package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong (or worth a warning) in a configuration file,
// with where it is so an editor can jump to it.
type Problem struct {
	// File is the file name given to Parse or Load.
	File string
	// Line and Col are 1-based; 0 when unknown (Col is unknown for YAML
	// syntax errors, both for problems that concern the file as a whole).
	Line, Col int
	// Path is the key path, e.g. "upstreams[1].name"; "" for the whole file.
	Path string
	// Message says what is wrong and how to fix it. It never contains the
	// value of an expanded environment variable.
	Message string
}

// String formats the problem as FILE:LINE:COL: PATH: message, leaving out
// the parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Col > 0 {
			fmt.Fprintf(&b, ":%d", p.Col)
		}
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is the error returned for an invalid configuration. It carries
// every error found, and the warnings too so `switchboard check` can show
// them alongside.
type Problems struct {
	// List holds the errors, ordered by position in the file.
	List []Problem
	// Warnings holds the warnings found before validation failed.
	Warnings []Problem
}

// Error lists the errors one per line.
func (p *Problems) Error() string {
	lines := make([]string, len(p.List))
	for i, pr := range p.List {
		lines[i] = pr.String()
	}
	return strings.Join(lines, "\n")
}

// reporter collects the problems of one Parse call, each with its position.
type reporter struct {
	file     string
	list     []Problem
	warnings []Problem
}

// sortProblems orders problems by position so the report reads top to
// bottom; the sort is stable so problems at one position keep their order.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

func (p *reporter) problems() *Problems {
	sortProblems(p.list)
	sortProblems(p.warnings)
	return &Problems{List: p.list, Warnings: p.warnings}
}

func (p *reporter) at(n *yaml.Node, path, msg string) Problem {
	pr := Problem{File: p.file, Path: path, Message: msg}
	if n != nil {
		pr.Line, pr.Col = n.Line, n.Column
	}
	return pr
}

func (p *reporter) errorf(n *yaml.Node, path, format string, args ...any) {
	p.list = append(p.list, p.at(n, path, fmt.Sprintf(format, args...)))
}

func (p *reporter) warnf(n *yaml.Node, path, format string, args ...any) {
	p.warnings = append(p.warnings, p.at(n, path, fmt.Sprintf(format, args...)))
}

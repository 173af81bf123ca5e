package codemode

import "fmt"

// Writes is what an endpoint in code mode does with a script's write: a call to a tool that is not
// readOnlyHint: true.
type Writes string

const (
	// WritesAsk asks the person (elicitation; input_required for a 2026-07-28 client) and refuses when there is
	// no one to ask. The default.
	WritesAsk Writes = "ask"
	// WritesAllow lets scripts write without asking.
	WritesAllow Writes = "allow"
	// WritesDeny refuses every write: scripts only read.
	WritesDeny Writes = "deny"
)

// Mode is an endpoint's code mode (discovery: code): its consent rule and the limits of its runs, whose zero
// fields take the engine's.
type Mode struct {
	Writes Writes
	Limits Limits
}

// ParseWrites reads a writes setting; "" is WritesAsk.
func ParseWrites(s string) (Writes, error) {
	switch w := Writes(s); w {
	case "":
		return WritesAsk, nil
	case WritesAsk, WritesAllow, WritesDeny:
		return w, nil
	}
	return "", fmt.Errorf("codemode: writes %q is not one of ask, allow, deny", s)
}

// Meta-tools of code mode, besides search mode's search_tools and call_tool: no script may call them.
const (
	DescribeTool = "describe_tools"
)

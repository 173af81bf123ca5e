// Package pin provides what pinning tool and prompt definitions needs (issue 15): the hash of a definition, the
// lock file `switchboard pin` writes, and the detection of invisible and bidirectional-control characters, a
// tool-poisoning trick that hides instructions from the person reading a description.
//
// A pin is the hash of what an upstream says a tool (or prompt) is. When the upstream later says something else
// (a "rug pull"), the hash differs and the gateway notices, whatever the change: a description that now asks the
// model to read ~/.ssh, a new parameter, a flipped destructiveHint.
package pin

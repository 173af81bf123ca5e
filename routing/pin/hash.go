package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/switchboard-mcp/switchboard/auth/jcs"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Kind is what a definition defines.
type Kind string

// The kinds that are pinned.
const (
	Tool   Kind = "tool"
	Prompt Kind = "prompt"
)

// fields are the members of a definition that say what it does; the rest (_meta, icons) may change freely.
func (k Kind) fields() []string {
	if k == Prompt {
		return []string{"name", "title", "description", "arguments"}
	}
	return []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
}

// Hash returns the pin of a definition: "sha256:" and the hex SHA-256 of the canonical JSON of its name, title,
// description, inputSchema, outputSchema and annotations (a prompt's: name, title, description and arguments).
//
// Canonical is RFC 8785's form (auth/jcs), the one the audit chain hashes records in: objects' members sorted, no
// whitespace, strings escaped the one way, numbers as a double prints. So the hash does not change when an
// upstream reorders members, reformats its JSON or respells a number (1.0, 1e0), and changes when any of those
// fields changes in meaning. A number a double cannot hold (9007199254740993) keeps its digits, so that two such
// numbers do not hash alike. A definition with a member name twice in one object (jsonrpc.DuplicateMember) has no
// hash.
//
// Lock files written before hold pins of an older form, legacyHash's; Lock.Match still accepts them.
func Hash(kind Kind, def []byte) (string, error) {
	v, err := jcs.Parse(def)
	if err != nil {
		// A member twice would make the hash one reading of a definition that a client may read the other way.
		if name, dup := jsonrpc.DuplicateMember(def); dup {
			return "", fmt.Errorf("pin: %s definition has member %q twice", kind, name)
		}
		return "", fmt.Errorf("pin: %s definition is not a JSON object: %w", kind, err)
	}
	all, ok := v.(jcs.Object)
	if !ok {
		return "", fmt.Errorf("pin: %s definition is not a JSON object", kind)
	}
	kept := slices.DeleteFunc(slices.Clone(all), func(m jcs.Member) bool { return !slices.Contains(kind.fields(), m.Key) })
	b, err := jcs.AppendExact(nil, kept)
	if err != nil {
		return "", fmt.Errorf("pin: %s definition: %w", kind, err)
	}
	return digest(b), nil
}

// digest formats a pin from a canonical form.
func digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// LegacyHash is def's pin in the older form (legacyHash's), as a pin store kept it before pins were RFC 8785.
func LegacyHash(kind Kind, def []byte) (string, error) { return legacyHash(kind, def) }

// legacyHash is Hash as lock files written before pins were RFC 8785 hold it, kept only to read them (Lock.Match): encoding/json's
// sorted members without HTML escaping, numbers as the upstream wrote them.
func legacyHash(kind Kind, def []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(def))
	d.UseNumber()
	var all map[string]any
	if err := d.Decode(&all); err != nil || all == nil {
		return "", fmt.Errorf("pin: %s definition is not a JSON object", kind)
	}
	if _, err := d.Token(); err != io.EOF {
		return "", fmt.Errorf("pin: %s definition has more after its JSON object", kind)
	}
	if name, dup := jsonrpc.DuplicateMember(def); dup {
		return "", fmt.Errorf("pin: %s definition has member %q twice", kind, name)
	}
	kept := make(map[string]any, len(kind.fields()))
	for _, f := range kind.fields() {
		if v, ok := all[f]; ok {
			kept[f] = v
		}
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(kept); err != nil { // maps encode with sorted keys
		return "", fmt.Errorf("pin: %s definition: %w", kind, err)
	}
	return digest(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

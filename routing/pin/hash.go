package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

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
// Canonical means that objects' members are sorted, there is no whitespace, strings are escaped the one way
// encoding/json escapes them (without HTML escaping), and numbers are kept as the upstream wrote them. So the
// hash does not change when an upstream reorders members or reformats its JSON, and changes when any of those
// fields changes in meaning. A definition with a member name twice in one object (jsonrpc.DuplicateMember) has no hash.
func Hash(kind Kind, def []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(def))
	d.UseNumber()
	var all map[string]any
	if err := d.Decode(&all); err != nil {
		return "", fmt.Errorf("pin: %s definition is not a JSON object: %w", kind, err)
	}
	if all == nil {
		return "", fmt.Errorf("pin: %s definition is null, not a JSON object", kind)
	}
	if _, err := d.Token(); err != io.EOF {
		return "", fmt.Errorf("pin: %s definition has more after its JSON object", kind)
	}
	// A member twice would make the hash one reading of a definition that a client may read the other way.
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
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

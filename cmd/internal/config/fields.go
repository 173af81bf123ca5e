package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// field is one key of the file as its section's table gives it. The tables
// are the one place a key is written down: the known keys (and the
// suggestions for typos) are their keys, and the key reference of
// docs/configuration.md and the JSON Schema docs/config.schema.json are
// generated from them (TestKeyReference and TestConfigSchema keep both
// current).
type field struct {
	key string
	// doc says what the key does, in a sentence or two.
	doc string
	// def is the default as the file would write it, or in parentheses a
	// description of it ("(publicURL + /mcp)"); "" when the key has none:
	// unset means off, or the key is required.
	def string
	// secret marks a credential: String and Redacted never show its value
	// (TestSecretsNeverShown sets each one).
	secret bool
	// typ is the value's type, enum its words when it takes a few.
	typ  valueType
	enum []string
	// min and max bound an integer, when max is set.
	min, max int
	// sub are the keys of a block (typ block, blockList, blockMap or
	// boolOrBlock).
	sub func() []field
}

// valueType is the type of a key's value, as the reference and the schema
// describe it.
type valueType int

const (
	tString valueType = iota
	tInt
	tNumber
	tBool
	tDuration
	tSize
	tStrings
	tScalars // a list of strings, numbers or booleans (read as text)
	tStringMap
	tObject // any JSON object
	tClaims // claim name to a value or a list of values
	tBlock
	tBlockList
	tBlockMap
	tBoolOrBlock
)

// keys returns the keys of a table, in its order.
func keys(fs []field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.key
	}
	return out
}

// pick returns the fields of fs named by names, in that order: a form that
// takes some of a section's keys (the mcpServers form takes an upstream's).
func pick(fs []field, names ...string) []field {
	out := make([]field, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(fs, func(f field) bool { return f.key == n })
		if i < 0 {
			panic("config: no field " + n) // a table's mistake, caught by every test
		}
		out = append(out, fs[i])
	}
	return out
}

// enumOf returns the words of a string type's values.
func enumOf[T ~string](vals ...T) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}

// durationText writes a default duration as the file would: "60s", "10m",
// "1h", "500ms".
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sizeText writes a default size as the file would: "4MiB", "64MiB".
func sizeText(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprint(n)
}

// blockField is a key of a block read into a T: the key's field, and how its
// value is read. A block whose keys are read one by one is a table of them,
// so a new key is one more entry.
type blockField[T any] struct {
	field
	// read reads the key's value (set, and not null) at path into v.
	read func(p *parser, f pair, path string, v *T)
}

// fieldsOf returns a block table's fields.
func fieldsOf[T any](table []blockField[T]) []field {
	out := make([]field, len(table))
	for i, bf := range table {
		out[i] = bf.field
	}
	return out
}

// readBlock reads the mapping n at path into v, key by key in the table's
// order. It returns the mapping, for checks that involve several keys, and
// false when n is not one.
func readBlock[T any](p *parser, n *yaml.Node, path string, hints map[string]string, table []blockField[T], v *T) (*object, bool) {
	o, ok := p.object(n, path, keySpec{known: keys(fieldsOf(table)), hints: hints})
	if !ok {
		return o, false
	}
	readFields(p, o, path, table, v)
	return o, true
}

// readFields reads the keys of table that the mapping o at path sets into v,
// in the table's order: for a block whose other keys say which table applies.
func readFields[T any](p *parser, o *object, path string, table []blockField[T], v *T) {
	for _, bf := range table {
		if f, ok := o.get(bf.key); ok {
			bf.read(p, f, join(path, bf.key), v)
		}
	}
}

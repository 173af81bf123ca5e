package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
)

// lockVersion is the lock file format this package reads and writes. Its pins were once of legacyHash's form and
// are now of Hash's (RFC 8785): Match accepts either for a definition that has not changed, and every pin written
// since (an approval, `switchboard pin`) is of Hash's. The format did not change, so neither did the version.
const lockVersion = 1

// Lock is the content of a lock file: the pinned hash of each tool and prompt of each pinned upstream. It is
// immutable once read or built; With returns a changed copy.
type Lock struct {
	upstreams map[string]Locked
}

// Locked is one upstream's pins: item name to hash.
type Locked struct {
	Tools   map[string]string `json:"tools,omitempty"`
	Prompts map[string]string `json:"prompts,omitempty"`
}

func (l Locked) of(kind Kind) map[string]string {
	if kind == Prompt {
		return l.Prompts
	}
	return l.Tools
}

// lockFile is the JSON form: versioned, with members sorted (encoding/json sorts map keys), so that a lock file
// under version control changes by one line when one definition does.
type lockFile struct {
	Version   int               `json:"version"`
	Upstreams map[string]Locked `json:"upstreams"`
}

// NewLock returns a lock of the given upstreams' pins.
func NewLock(upstreams map[string]Locked) *Lock {
	l := &Lock{upstreams: make(map[string]Locked, len(upstreams))}
	for name, u := range upstreams {
		l.upstreams[name] = Locked{Tools: maps.Clone(u.Tools), Prompts: maps.Clone(u.Prompts)}
	}
	return l
}

// ReadLock reads a lock file. A missing file is an error wrapping fs.ErrNotExist, so that a caller can say to run
// `switchboard pin`.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLock(b)
}

// ParseLock parses a lock file's content.
func ParseLock(b []byte) (*Lock, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var f lockFile
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a switchboard lock file: %w", err)
	}
	if f.Version != lockVersion {
		return nil, fmt.Errorf("lock file version %d; this switchboard reads version %d (run switchboard pin again)", f.Version, lockVersion)
	}
	for name, u := range f.Upstreams {
		for _, m := range []map[string]string{u.Tools, u.Prompts} {
			for item, h := range m {
				if h == "" || item == "" {
					return nil, fmt.Errorf("upstream %q: an empty name or hash", name)
				}
			}
		}
	}
	return NewLock(f.Upstreams), nil
}

// Marshal returns the lock file's content (a nil lock pins nothing).
func (l *Lock) Marshal() []byte {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	ups := map[string]Locked{}
	if l != nil && l.upstreams != nil {
		ups = l.upstreams
	}
	_ = e.Encode(lockFile{Version: lockVersion, Upstreams: ups}) // maps of strings always encode
	return buf.Bytes()
}

// Write writes the lock file atomically: to a temporary file in the same directory, renamed over path, so that a
// gateway reading it never sees half a file.
func (l *Lock) Write(path string) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(l.Marshal()); err != nil {
		_ = f.Close()
		return fmt.Errorf("write lock file: %w", err)
	}
	if err = f.Chmod(0o644); err != nil {
		_ = f.Close()
		return fmt.Errorf("write lock file: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	return nil
}

// Pinned reports whether the lock pins the upstream at all: an item new in a pinned upstream is a change too.
func (l *Lock) Pinned(upstream string) bool {
	if l == nil {
		return false
	}
	_, ok := l.upstreams[upstream]
	return ok
}

// Get returns the pinned hash of an upstream's item.
func (l *Lock) Get(upstream string, kind Kind, name string) (string, bool) {
	if l == nil {
		return "", false
	}
	h, ok := l.upstreams[upstream].of(kind)[name]
	return h, ok
}

// Match returns the pinned hash of an upstream's item, as Get does, given the hash Hash gives its definition now
// (seen) and the definition itself: when the lock holds the hash of the same definition in its older form
// (legacyHash, before pins were RFC 8785), it returns seen, so that a definition that has not changed is not reported as changed for the
// change of form. The lock's pin is rewritten in today's form with the next write of that item.
func (l *Lock) Match(upstream string, kind Kind, name, seen string, def []byte) (string, bool) {
	h, ok := l.Get(upstream, kind, name)
	if !ok || h == seen {
		return h, ok
	}
	if old, err := legacyHash(kind, def); err == nil && old == h {
		return seen, true
	}
	return h, true
}

// Upstreams returns a copy of every upstream's pins (none for a nil lock).
func (l *Lock) Upstreams() map[string]Locked {
	if l == nil {
		return map[string]Locked{}
	}
	return NewLock(l.upstreams).upstreams
}

// With returns a copy of the lock with one item pinned to hash (the upstream pinned too, if it was not).
func (l *Lock) With(upstream string, kind Kind, name, hash string) *Lock {
	var ups map[string]Locked
	if l != nil {
		ups = l.upstreams
	}
	n := NewLock(ups)
	u := n.upstreams[upstream]
	if kind == Prompt {
		if u.Prompts == nil {
			u.Prompts = map[string]string{}
		}
		u.Prompts[name] = hash
	} else {
		if u.Tools == nil {
			u.Tools = map[string]string{}
		}
		u.Tools[name] = hash
	}
	n.upstreams[upstream] = u
	return n
}

// IsNotExist reports whether err says the lock file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

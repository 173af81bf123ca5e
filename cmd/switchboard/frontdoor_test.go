package main

// The front door (issue 36, item 3): the README names every command, and no relative link in the README or docs/
// leads nowhere.

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestREADMECommands: every command the usage text lists is in the README's command table, and run knows it.
func TestREADMECommands(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, line := range strings.Split(usage, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "switchboard" && f[1] != "COMMAND" {
			cmds = append(cmds, f[1])
		}
	}
	if len(cmds) < 5 {
		t.Fatalf("found %d commands in the usage text: %v", len(cmds), cmds)
	}
	for _, c := range cmds {
		if !bytes.Contains(readme, []byte("| `switchboard "+c)) {
			t.Errorf("README.md's command table has no row for `switchboard %s`", c)
		}
		var stderr bytes.Buffer
		run([]string{c, "-h"}, &bytes.Buffer{}, &stderr)
		if strings.Contains(stderr.String(), "unknown command") {
			t.Errorf("usage lists %q, which run does not know", c)
		}
	}
}

// mdLink finds inline Markdown links and images: [text](target) and ![alt](target), the target up to a space or ')'.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks: every relative link in README.md and docs/ names a file that exists, and an anchor names a heading
// of that file (GitHub's slugs).
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingSlugs(t, path)
		anchors[path] = a
		return a
	}
	checked := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for i, line := range strings.Split(stripCode(string(text)), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				}
				checked++
				st, err := os.Stat(dest)
				if err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", rel, i+1, target, path)
					continue
				}
				if anchor != "" && !st.IsDir() && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[anchor] {
					t.Errorf("%s:%d: link %q: no heading with that anchor", rel, i+1, target)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links: is the pattern still right?", checked)
	}
}

// stripCode blanks fenced code blocks, whose brackets are code, not links, keeping the line count.
func stripCode(s string) string {
	lines := strings.Split(s, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// headingSlugs returns the anchors GitHub makes for a Markdown file's headings: lower case, punctuation other
// than '-' and connectors such as '_' dropped, spaces as '-', a repeated slug suffixed -1, -2...
func headingSlugs(t *testing.T, path string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(stripCode(string(text)), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

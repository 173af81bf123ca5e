package main

// The guard of issue 32: the code's shape, measured from its syntax. The limits are the issue's: no type over 40
// methods or spread over more than 5 files, no function over 120 lines, no non-test file over 700 lines, and
// routing's exported declarations held to a number (counted by name: each exported type, function, constant and
// variable of the package, so a grouped const block counts each name; go doc -short counts fewer). What exceeds a limit today is listed, with today's figure, in
// testdata/codeshape.txt: a listed figure may only fall (the test then asks for the lower figure, so that the gain
// is kept), and nothing new may join the list. The reshape's gain was lost once for want of this.

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Limits of issue 32 ("Done when").
const (
	maxMethods       = 40
	maxTypeFiles     = 5
	maxFuncLines     = 120
	maxFileLines     = 700
	maxRoutingExport = 45
	maxTestSleeps    = 4
)

// shapeFigures measures the module's non-test Go files: each figure is keyed "<what> <name>" and is reported only
// when it passes its limit.
func shapeFigures(t *testing.T, root string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	methods := map[string]int{}
	files := map[string]map[string]bool{}
	out := map[string]int{}
	routingExported := 0
	var sleeps []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git", ".ci", "bin":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // a module of its own (the chart tests, bleveeval)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
			if err != nil {
				return err
			}
			for _, pos := range wallSleeps(fset, f) {
				sleeps = append(sleeps, fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(pos).Line))
			}
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if n := fset.Position(f.End()).Line; n > maxFileLines {
			out["file "+filepath.ToSlash(rel)] = n
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1; n > maxFuncLines {
					out["func "+pkg+"."+funcName(d)] = n
				}
				if d.Recv != nil {
					typ := pkg + "." + recvType(d.Recv.List[0].Type)
					methods[typ]++
					if files[typ] == nil {
						files[typ] = map[string]bool{}
					}
					files[typ][rel] = true
				} else if pkg == "routing" && d.Name.IsExported() {
					routingExported++
				}
			case *ast.GenDecl:
				if pkg != "routing" {
					continue
				}
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							routingExported++
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								routingExported++
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for typ, n := range methods {
		if n > maxMethods {
			out["methods "+typ] = n
		}
		if n := len(files[typ]); n > maxTypeFiles {
			out["files "+typ] = n
		}
	}
	if routingExported > maxRoutingExport {
		out["exported routing"] = routingExported
	}
	if len(sleeps) > maxTestSleeps {
		out["sleeps tests"] = len(sleeps)
		t.Logf("wall-clock sleeps in tests: %s", strings.Join(sleeps, " "))
	}
	return out
}

// wallSleeps finds the wall-clock sleeps of a test file: each use of time.Sleep (a call, or the function passed
// as a value) outside a function literal given to synctest.Test, whose bubble's clock is fake and sleeps cost
// nothing. A sleep that runs in a bubble from elsewhere (a helper or a table's closure called inside one) says so
// on its line with a comment naming "the bubble's clock".
func wallSleeps(fset *token.FileSet, f *ast.File) []token.Pos {
	bubbleLines := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if strings.Contains(c.Text, "the bubble's clock") {
				bubbleLines[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var out []token.Pos
	var walk func(n ast.Node, bubble bool)
	walk = func(n ast.Node, bubble bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if isSel(x.Fun, "synctest", "Test") {
					for _, a := range x.Args {
						walk(a, true)
					}
					return false
				}
			case *ast.SelectorExpr:
				if !bubble && isSel(x, "time", "Sleep") && !bubbleLines[fset.Position(x.Pos()).Line] {
					out = append(out, x.Pos())
				}
			}
			return true
		})
	}
	walk(f, false)
	return out
}

// isSel reports whether e is pkg.name.
func isSel(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil {
		return d.Name.Name
	}
	return recvType(d.Recv.List[0].Type) + "." + d.Name.Name
}

func recvType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvType(x.X)
	case *ast.IndexExpr:
		return recvType(x.X)
	case *ast.IndexListExpr:
		return recvType(x.X)
	case *ast.Ident:
		return x.Name
	}
	return fmt.Sprintf("%T", e)
}

// TestCodeShape holds the figures to testdata/codeshape.txt: none rises, nothing joins, and a figure that fell is
// written down lower. SWITCHBOARD_UPDATE_SHAPE=1 rewrites the file from the code (for a fall; a rise is a review's
// to accept).
func TestCodeShape(t *testing.T) {
	root := repoRoot(t)
	got := shapeFigures(t, root)
	path := filepath.Join("testdata", "codeshape.txt")
	if os.Getenv("SWITCHBOARD_UPDATE_SHAPE") == "1" {
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("# What passes issue 32's limits today, and by how much (TestCodeShape): a figure may only fall.\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %d\n", k, got[k])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	budget := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.Atoi(line[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("%s: bad line %q", path, line)
		}
		budget[line[:i]] = n
	}
	for k, n := range got {
		b, listed := budget[k]
		switch {
		case !listed:
			t.Errorf("%s is %d, past issue 32's limit: bring it within (only today's exceptions are listed in %s)", k, n, path)
		case n > b:
			t.Errorf("%s grew to %d (listed at %d): bring it back down instead", k, n, b)
		case n < b:
			t.Errorf("%s fell to %d (listed at %d): write the lower figure in %s (SWITCHBOARD_UPDATE_SHAPE=1) to keep the gain", k, n, b, path)
		}
	}
	for k, b := range budget {
		if _, ok := got[k]; !ok {
			t.Errorf("%s (listed at %d) is within the limits now: remove its line from %s", k, b, path)
		}
	}
}

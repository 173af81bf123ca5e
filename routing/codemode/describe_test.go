package codemode

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

var updateDescribe = flag.Bool("update-describe", false, "rewrite testdata/describe/*.d.ts from the current output")

// TestDescribe renders each testdata/describe/NAME.json (a tools/list array) and compares it with NAME.d.ts;
// every rendering must also parse as TypeScript.
func TestDescribe(t *testing.T) {
	files, err := filepath.Glob("testdata/describe/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var defs []json.RawMessage
			if err := json.Unmarshal(raw, &defs); err != nil {
				t.Fatal(err)
			}
			var tools []Tool
			for _, d := range defs {
				tool, err := ParseTool(d)
				if err != nil {
					t.Fatal(err)
				}
				tools = append(tools, tool)
			}
			got := Describe(tools)
			res := api.Transform(got, api.TransformOptions{Loader: api.LoaderTS})
			if len(res.Errors) > 0 {
				t.Errorf("not TypeScript: %v\n%s", res.Errors, got)
			}
			golden := strings.TrimSuffix(in, ".json") + ".d.ts"
			if *updateDescribe {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-describe)", err)
			}
			if got != string(want) {
				t.Errorf("Describe differs from %s (run with -update-describe):\n%s", golden, got)
			}
		})
	}
}

// TestBrief: search_tools' declarations keep a description's first sentence when it is long, and parse as
// TypeScript.
func TestBrief(t *testing.T) {
	long := "Read the complete contents of a file from the file system as text. Handles various text encodings and provides detailed error messages if the file cannot be read."
	for _, tc := range []struct{ desc, want string }{
		{"Short. Two sentences.", "/** Short. Two sentences. */"},
		{long, "/** Read the complete contents of a file from the file system as text. */"},
		{"First paragraph\nstill first.\n\nSecond paragraph.", "/** First paragraph still first. */"},
		{strings.Repeat("word ", 60), "/** " + strings.Repeat("word ", 39) + "word… */"},
	} {
		got := Brief([]Tool{{Name: "t", Description: tc.desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":` + strconv.Quote(long) + `}}}`)}})
		if !strings.Contains(got, "  "+tc.want+"\n") || !strings.Contains(got, "/** Read the complete contents of a file from the file system as text. */ p?: string;") {
			t.Errorf("%.30q: got\n%s", tc.desc, got)
		}
		if res := api.Transform(got, api.TransformOptions{Loader: api.LoaderTS}); len(res.Errors) > 0 {
			t.Errorf("not TypeScript: %v\n%s", res.Errors, got)
		}
	}
}

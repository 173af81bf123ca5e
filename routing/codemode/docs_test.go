package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"testing"
)

// docBlock is a script of docs/code-mode.md (a ts or js block) and the output block after it.
var docBlock = regexp.MustCompile("(?s)```(?:ts|js)\n(.*?)```\\s*```output\n(.*?)```")

// TestDocExamples runs every script in docs/code-mode.md against fake memory and file system servers, with an
// approver that declines, and compares what it printed and returned with the output block that follows it.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/code-mode.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlock.FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d examples in docs/code-mode.md", len(blocks))
	}
	notes := map[string]string{"/notes/Ada.txt": "Ada wrote programs.\n", "/notes/Grace.txt": "Grace wrote compilers\n"}
	f := &fakeCaller{tools: map[string]func(context.Context, map[string]any) (json.RawMessage, error){
		"memory__read_graph": func(context.Context, map[string]any) (json.RawMessage, error) {
			return structured(map[string]any{"entities": []any{
				map[string]any{"name": "Ada", "entityType": "person"},
				map[string]any{"name": "Analytical Engine", "entityType": "machine"},
				map[string]any{"name": "Grace", "entityType": "person"},
			}, "relations": []any{}}), nil
		},
		"fs__read_text_file": func(_ context.Context, a map[string]any) (json.RawMessage, error) {
			p, _ := a["path"].(string)
			if text, ok := notes[p]; ok {
				return textResult(text), nil
			}
			return json.RawMessage(fmt.Sprintf(`{"isError":true,"content":[{"type":"text","text":"ENOENT: no such file or directory, open '%s'"}]}`, p)), nil
		},
		"memory__create_entities": func(context.Context, map[string]any) (json.RawMessage, error) {
			return textResult("created"), nil
		},
	}}
	tools := []Tool{{Name: "memory__read_graph", ReadOnly: true}, {Name: "fs__read_text_file", ReadOnly: true}, {Name: "memory__create_entities"}}
	e := NewEngine(Options{})
	defer e.Close()
	for i, b := range blocks {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			res, err := e.Run(context.Background(), Run{Code: b[1], Tools: tools, Caller: f, Approver: &approver{d: Decline}})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, b[1])
			}
			got := res.Output
			if res.Value != nil {
				got += "=> " + string(res.Value) + "\n"
			}
			if got != b[2] {
				t.Errorf("example %d printed\n%s\nthe doc says\n%s", i, got, b[2])
			}
		})
	}
}

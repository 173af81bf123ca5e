package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/routing/search/evalset"
	"github.com/switchboard-mcp/switchboard/routing/search/hybrid"
)

// embeddingsServer starts .ci/peers/embeddings-server.mjs, a real model behind an OpenAI-compatible endpoint, and
// returns its base URL. Without Node or the peer it skips, or fails under SWITCHBOARD_E2E=require (CI).
func embeddingsServer(t *testing.T) string {
	t.Helper()
	missing := t.Skipf
	if os.Getenv("SWITCHBOARD_E2E") == "require" {
		missing = t.Fatalf
	}
	peers, err := filepath.Abs(filepath.Join("..", "..", ".ci", "peers"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(peers, "node_modules", "@energetic-ai", "model-embeddings-en", "package.json")); err != nil {
		missing("the embeddings model is not installed: run .ci/setup (%v)", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found on PATH: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, filepath.Join(peers, "embeddings-server.mjs"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("the embeddings server did not start: %q %v\n%s", line, err, stderr.String())
	}
	return url
}

// TestHybridRecallRealModel runs hybrid search's measurement (hybridRecall, as -search-embeddings does over the
// whole catalog) against a real model, on a part of the catalog small enough for CI: the servers that the first
// blind queries were written for, and the queries answered within them. It proves the provider's vectors reach
// the ranking (every tool embedded, each query's vector fused) and that the fused ranking finds the tools: the
// floor sits under this part's measured recall@5 (0.93–1.0). docs/benchmarks.md has the whole catalog's numbers.
func TestHybridRecallRealModel(t *testing.T) {
	url := embeddingsServer(t)
	all := evalset.BlindQueries()
	servers := map[string]bool{}
	for _, q := range all {
		if len(servers) == 8 {
			break
		}
		servers[q.Server] = true
	}
	var docs []search.Doc
	known := map[string]bool{}
	for _, d := range evalset.CatalogDocs() {
		if servers[d.Upstream] {
			docs = append(docs, d)
			known[d.Name] = true
		}
	}
	var qs []evalset.BlindQuery
	for _, q := range all {
		if servers[q.Server] && allKnown(q.Strict, known) {
			qs = append(qs, q)
		}
	}
	r, err := hybridRecall(context.Background(), hybrid.Config{URL: url, Model: "use-lite"}, docs, qs)
	if err != nil {
		t.Fatal(err)
	}
	if r.docs != len(docs) || r.dims != 512 {
		t.Fatalf("%d vectors of %d dimensions, want %d of 512", r.docs, r.dims, len(docs))
	}
	// Each query is ranked once per label.
	if r.changed == 0 {
		t.Errorf("the vectors changed no query's first 10 of %d: they did not reach the ranking", len(qs))
	}
	t.Logf("the vectors changed the first 10 of %d of %d queries", r.changed/2, len(qs))
	for _, row := range r.rows {
		t.Logf("%-8s %-10s %3d queries: BM25 %.3f/%.3f/%.3f hybrid %.3f/%.3f/%.3f", row.split, row.label, row.bm25.Queries,
			row.bm25.Recall1, row.bm25.Recall5, row.bm25.Recall10, row.blended.Recall1, row.blended.Recall5, row.blended.Recall10)
		if row.blended.Recall5 < 0.8 {
			t.Errorf("%s %s: hybrid recall@5 %.3f, want ≥ 0.8", row.split, row.label, row.blended.Recall5)
		}
	}
}

func allKnown(names []string, known map[string]bool) bool {
	for _, n := range names {
		if !known[n] {
			return false
		}
	}
	return len(names) > 0
}

// TestHybridFlags: a -search-embeddings the provider's client would refuse ends the run before it starts.
func TestHybridFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-scenarios", "search", "-search-embeddings", "ftp://example.com/v1"},
		{"-scenarios", "search", "-search-embeddings", "http://127.0.0.1:1/v1", "-search-embeddings-model", " "},
	} {
		var out, log bytes.Buffer
		if code := cmdRun(args, &out, &log); code != 2 || !strings.Contains(log.String(), "-search-embeddings:") {
			t.Errorf("%v: exit %d, want 2 and the flag named (%s)", args, code, log.String())
		}
	}
}

package main

// `switchboard audit verify` (docs/operations.md, "SIEM export and verification"): a log written through the real
// Auditor, tampered with, names its first break; and end to end, the log of a running gateway verifies and a
// tampered copy does not.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/auth"
)

// writeAuditLog writes a JSON log as the gateway does with log.format: json: a line of its own, five audit
// records through one Auditor (calls and a definition event), and returns its lines and the stream id.
func writeAuditLog(t *testing.T) ([]string, string) {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	a := auth.NewStreamAuditor(log, "gw-0")
	ctx := context.Background()
	log.Info("listening", "addr", "127.0.0.1:8080")                       // line 1
	for i, outcome := range []string{"ok", "denied", "", "error", "ok"} { // lines 2..6 are seq 1..5
		if outcome == "" {
			a.Definition(ctx, auth.DefinitionEvent{Upstream: "files", Kind: "tool", Name: "read", Action: "served", Pinned: "sha256:aa", Seen: "sha256:bb"})
			continue
		}
		a.Call(ctx, auth.AuditEvent{Upstream: "files", Method: "tools/call", Tool: fmt.Sprint("tool", i), Outcome: outcome,
			Duration: time.Duration(i) * time.Millisecond, DefinitionHash: "sha256:aa"})
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"), a.Stream()
}

func writeLines(t *testing.T, ls []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.log")
	if err := os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditVerifyCommand: the command's report and exit status for an intact log and for a tampered one (a field
// changed, a record deleted, two swapped, the head cut), each break named by its line.
func TestAuditVerifyCommand(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func([]string) []string
		flags  []string
		code   int
		want   string // the report, with STREAM for the stream id
	}{
		{name: "intact", code: exitOK, want: "stream STREAM: intact: 5 records, seq 1..5 on lines 2..6\n" +
			"FILE: 1 stream(s), every chain intact\n"},
		{name: "altered", code: exitFailure,
			tamper: func(ls []string) []string {
				ls[3] = strings.Replace(ls[3], `"name":"read"`, `"name":"write"`, 1)
				return ls
			},
			want: "stream STREAM: BROKEN at line 4 (altered): seq 3 on line 4 was altered: its hash does not match its contents (or the log handler adds or rewrites fields)\n" +
				"FILE: 1 stream(s), 1 broken, 0 malformed line(s)\n"},
		{name: "deleted", code: exitFailure,
			tamper: func(ls []string) []string { return append(ls[:2], ls[3:]...) },
			want: "stream STREAM: BROKEN at line 3 (missing): seq 2 is missing between line 2 (seq 1) and line 3 (seq 3)\n" +
				"FILE: 1 stream(s), 1 broken, 0 malformed line(s)\n"},
		{name: "reordered", code: exitFailure,
			tamper: func(ls []string) []string { ls[4], ls[5] = ls[5], ls[4]; return ls },
			want: "stream STREAM: BROKEN at line 5 (reordered): records are out of order: seq 5 on line 5 comes before seq 4 on line 6\n" +
				"FILE: 1 stream(s), 1 broken, 0 malformed line(s)\n"},
		{name: "head cut", code: exitFailure,
			tamper: func(ls []string) []string { return append(ls[:1], ls[3:]...) },
			want: "stream STREAM: BROKEN at line 2 (truncated-head): the stream starts at seq 3 on line 2: seq 1..2 (2 records) are not in this log " +
				"(deleted, or in an older file of a rotated log: verify the files together, or pass --allow-truncated-head)\n" +
				"FILE: 1 stream(s), 1 broken, 0 malformed line(s)\n"},
		{name: "head cut, allowed", code: exitOK, flags: []string{"--allow-truncated-head"},
			tamper: func(ls []string) []string { return append(ls[:1], ls[3:]...) },
			want: "stream STREAM: intact: 3 records, seq 3..5 on lines 2..4; starts at seq 3, earlier records are not in FILE\n" +
				"FILE: 1 stream(s), every chain intact\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ls, stream := writeAuditLog(t)
			if c.tamper != nil {
				ls = c.tamper(ls)
			}
			path := writeLines(t, ls)
			var out, errOut bytes.Buffer
			code := run(append(append([]string{"audit", "verify"}, c.flags...), path), &out, &errOut)
			got := strings.ReplaceAll(strings.ReplaceAll(out.String(), stream, "STREAM"), path, "FILE")
			if code != c.code || got != c.want || errOut.Len() != 0 {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %s\nwant exit %d, stdout:\n%s", code, got, errOut.String(), c.code, c.want)
			}
		})
	}
}

// TestAuditVerifyStdinAndUsage: "-" reads standard input; usage errors and unreadable files exit 2; a log with no
// chained records (log.format: text) exits 1, saying why.
func TestAuditVerifyStdinAndUsage(t *testing.T) {
	ls, _ := writeAuditLog(t)
	var out, errOut bytes.Buffer
	if code := auditCommand([]string{"verify", "-"}, strings.NewReader(strings.Join(ls, "\n")), &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "standard input: 1 stream(s), every chain intact") {
		t.Errorf("verify -: exit %d\n%s%s", code, &out, &errOut)
	}

	path := writeLines(t, ls)
	for _, args := range [][]string{
		{"audit"}, {"audit", "frob"}, {"audit", "verify"}, {"audit", "verify", path, path},
		{"audit", "verify", path, "--allow-truncated-head"}, {"audit", "verify", "--frob", path},
		{"audit", "verify", filepath.Join(t.TempDir(), "absent.log")},
	} {
		out.Reset()
		errOut.Reset()
		if code := run(args, &out, &errOut); code != exitUsage || errOut.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want %d and a message", args, code, errOut.String(), exitUsage)
		}
	}

	var text bytes.Buffer
	auth.NewAuditor(slog.New(slog.NewTextHandler(&text, nil))).Call(context.Background(), auth.AuditEvent{Upstream: "u", Method: "tools/call", Outcome: "ok"})
	out.Reset()
	if code := run([]string{"audit", "verify", writeLines(t, []string{text.String()})}, &out, &errOut); code != exitFailure ||
		!strings.Contains(out.String(), "holds no chained audit records: nothing was verified (the gateway must log with log.format: json)") {
		t.Errorf("text log: exit %d\n%s", code, &out)
	}
}

// TestE2EAuditVerify: a real gateway (log.format: json) audits tool calls, with their definition hash, and a
// definition change into one chain on its standard error; the built binary's `audit verify` accepts that log and
// names the record a tamperer changed.
func TestE2EAuditVerify(t *testing.T) {
	if os.Getenv("SWITCHBOARD_E2E") == "off" {
		t.Skip("SWITCHBOARD_E2E=off")
	}
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped in -short mode")
	}
	tmp := t.TempDir()
	bin := buildSwitchboard(t)
	up := newRugUpstream(t)
	body := fmt.Sprintf("log: {format: json}\npinning: {onChange: warn}\nupstreams:\n  - {name: rug, url: %q, session: shared}\n", up.url)
	gw := startReplica(t, bin, tmp, "gateway", body)
	var changed atomic.Int32
	cs := gw.connect(t, &changed)
	call := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opsWait)
		defer cancel()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rug__read", Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Fatalf("tools/call: %v", err)
		}
	}
	call()
	call()
	up.set("Reads a file, and more.")
	eventually(t, gw.p, "the definition change to be audited", func() bool { return strings.Contains(gw.p.log.String(), `"outcome":"definition_served"`) })
	call()
	eventually(t, gw.p, "three audited calls", func() bool { return strings.Count(gw.p.log.String(), `"tool":"rug__read"`) >= 3 })

	// The log as the test saw it, up to its last whole line (the gateway is still running).
	logText := gw.p.log.String()
	logText = logText[:strings.LastIndexByte(logText, '\n')+1]
	var records []map[string]any
	for _, l := range strings.Split(logText, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "audit" {
			records = append(records, m)
		}
	}
	if len(records) != 4 {
		t.Fatalf("%d audit records, want 3 calls and 1 definition change:\n%s", len(records), logText)
	}
	for i, m := range records {
		if m["seq"] != float64(i+1) || m["stream"] != records[0]["stream"] {
			t.Errorf("record %d: seq %v stream %v", i, m["seq"], m["stream"])
		}
		if h, _ := m["definitionHash"].(string); m["tool"] == "rug__read" && !strings.HasPrefix(h, "sha256:") {
			t.Errorf("call record without its definition hash: %v", m)
		}
	}
	if records[2]["definitionHash"] == records[3]["definitionHash"] {
		t.Errorf("the call after the change carries the old definition's hash %v", records[3]["definitionHash"])
	}

	verify := func(text string) (int, string) {
		t.Helper()
		path := filepath.Join(tmp, "gateway.log")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "audit", "verify", path)
		out, err := cmd.CombinedOutput()
		if err != nil && cmd.ProcessState == nil {
			t.Fatalf("run %s: %v", bin, err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := verify(logText); code != exitOK || !strings.Contains(out, "intact: 4 records, seq 1..4") {
		t.Fatalf("audit verify of the gateway's log: exit %d\n%s", code, out)
	}
	// Make the first call look as if it failed.
	first := strings.Index(logText, `"tool":"rug__read","outcome":"ok"`)
	if first < 0 {
		t.Fatalf("no ok call record in\n%s", logText)
	}
	tampered := logText[:first] + `"tool":"rug__read","outcome":"error"` + logText[first+len(`"tool":"rug__read","outcome":"ok"`):]
	line := strings.Count(logText[:first], "\n") + 1
	if code, out := verify(tampered); code != exitFailure || !strings.Contains(out, fmt.Sprintf("BROKEN at line %d (altered): seq 1 on line %d was altered", line, line)) {
		t.Errorf("audit verify of the tampered log: exit %d\n%s", code, out)
	}
}

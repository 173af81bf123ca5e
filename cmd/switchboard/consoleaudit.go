package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/gateway/console"
)

// auditLog reads the audit records back from the file the gateway's JSON log is collected in (console.auditLog):
// the latest for the audit page, and the whole file for the chain's verification, which `switchboard audit
// verify` does too. The verification is kept while the file is unchanged, for at most chainCacheTTL.
type auditLog struct {
	path string

	mu       sync.Mutex
	verified console.ChainState
	size     int64
	modTime  time.Time
}

const (
	// auditTailBytes is how much of the log's end the audit page reads: the latest records are there.
	auditTailBytes = 8 << 20
	// chainCacheTTL is how long a verification is kept for an unchanged file.
	chainCacheTTL = 30 * time.Second
	// maxVerifiedBytes bounds the log the audit page verifies: a page load must not read gigabytes.
	maxVerifiedBytes = 256 << 20
)

// auditRecord is an audit record's fields as auth.Auditor writes them.
type auditRecord struct {
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	Sub        string    `json:"sub"`
	Endpoint   string    `json:"endpoint"`
	Upstream   string    `json:"upstream"`
	Method     string    `json:"method"`
	Tool       string    `json:"tool"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason"`
	DurationMS float64   `json:"duration_ms"`
	// A definition record's.
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action string `json:"action"`
}

// latest gives the newest audit records that match f, newest first. A record made through the whole catalog
// (/mcp) has no endpoint.
func (a *auditLog) latest(f console.AuditFilter) ([]console.AuditEvent, error) {
	file, err := os.Open(a.path)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	from := max(st.Size()-auditTailBytes, 0)
	if _, err := file.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []console.AuditEvent
	first := from > 0 // the first line read is likely cut
	for sc.Scan() {
		line := sc.Bytes()
		if first {
			first = false
			continue
		}
		if !bytes.Contains(line, []byte(`"msg":"audit"`)) {
			continue
		}
		var r auditRecord
		if json.Unmarshal(line, &r) != nil || r.Msg != auth.AuditMessage {
			continue
		}
		e := eventOf(r)
		if matches(e, f) {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	slices.Reverse(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// eventOf is a record as the audit page shows it: a call, or what pinning did about a definition.
func eventOf(r auditRecord) console.AuditEvent {
	e := console.AuditEvent{Time: r.Time, Person: r.Sub, Endpoint: r.Endpoint, Upstream: r.Upstream, Method: r.Method, Tool: r.Tool,
		Outcome: r.Outcome, Reason: r.Reason, Duration: time.Duration(r.DurationMS * float64(time.Millisecond))}
	if r.Method == "" && r.Action != "" {
		e.Method, e.Tool, e.Outcome = "pin "+r.Kind, r.Name, r.Action
	}
	return e
}

func matches(e console.AuditEvent, f console.AuditFilter) bool {
	has := func(field, want string) bool {
		return want == "" || strings.Contains(strings.ToLower(field), strings.ToLower(want))
	}
	return has(e.Person, f.Person) && has(e.Tool, f.Tool) && (f.Outcome == "" || e.Outcome == f.Outcome) &&
		(f.Endpoint == "" || e.Endpoint == f.Endpoint)
}

// verify checks the log's chains, or gives the last check of the unchanged file.
func (a *auditLog) verify(now time.Time) console.ChainState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, err := os.Stat(a.path)
	if err != nil {
		return console.ChainState{Detail: "The audit log cannot be read: " + err.Error(), At: now}
	}
	if !a.verified.At.IsZero() && st.Size() == a.size && st.ModTime().Equal(a.modTime) && now.Sub(a.verified.At) < chainCacheTTL {
		return a.verified
	}
	var cs console.ChainState
	if st.Size() > maxVerifiedBytes {
		cs = console.ChainState{Detail: fmt.Sprintf("The audit log is %d MiB, more than the console verifies on a page load (%d MiB): "+
			"rotate it, or run switchboard audit verify %s.", st.Size()>>20, maxVerifiedBytes>>20, a.path), At: now}
	} else {
		cs = a.check(now)
	}
	a.verified, a.size, a.modTime = cs, st.Size(), st.ModTime()
	return cs
}

// check reads the whole log through auth.VerifyAuditLog, as `switchboard audit verify` does: a stream whose first
// record is not there (a rotated log) is a break.
func (a *auditLog) check(now time.Time) console.ChainState {
	f, err := os.Open(a.path)
	if err != nil {
		return console.ChainState{Detail: "The audit log cannot be read: " + err.Error(), At: now}
	}
	defer f.Close()
	rep, err := auth.VerifyAuditLog(f, auth.AuditVerifyOptions{})
	if err != nil {
		return console.ChainState{Detail: "The audit log cannot be read: " + err.Error(), At: now}
	}
	// A log without a chained record verifies nothing: not a broken chain, but nothing to check (a text log).
	cs := console.ChainState{Checked: len(rep.Streams) > 0, Intact: rep.Intact(), Streams: len(rep.Streams), At: now}
	for _, s := range rep.Streams {
		cs.Records += s.Records
	}
	var b strings.Builder
	printAuditReport(&b, a.path, rep)
	cs.Detail = strings.TrimSpace(b.String())
	return cs
}

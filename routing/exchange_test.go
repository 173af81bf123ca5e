package routing

// Golden JSON-RPC exchanges through a fake upstream. Each file in testdata/exchanges is one case, a txtar
// archive (golang.org/x/tools/txtar): a free-text description, then sections introduced by "-- name --" lines:
//
//	config          "key: value" lines: mode (shared | per-client), timeout (Options.RequestTimeout),
//	                pagesize (Options.PageSize), caps (the upstream's capabilities), tools (the upstream's
//	                tools, a JSON array), resources and templates (its resources and resource templates, JSON
//	                arrays), namespacing (Options.ResourceNamespacing: auto | always | never), twin (yes: a
//	                second upstream "twin", prefix twin__, after "fake", with the same config and its own fake)
//	twin script     how the twin answers (as the upstream script; without it, the upstream script's rules)
//	client          the steps the test drives, in order (below)
//	upstream script how the fake upstream answers what the gateway sends it (below)
//	want upstream   every message the upstream received during the steps, "#<connection> <message>" (the
//	                twin's after the upstream's, "twin#<connection> <message>")
//	want client     every message each client stream got, "<stream> <message>", stream by stream, and
//	                "<stream> end" where the stream completed
//
// Client steps:
//
//	new S caps          create session S with these client capabilities (sessions are otherwise created on first
//	                    use with {"sampling":{},"roots":{}})
//	modern S caps       let S be the router's pooled session for modern (2026-07-28) clients with these
//	                    capabilities; its requests carry their own _meta
//	S close R           the client of stream R closes it: for a modern client, its request's cancellation
//	S request R msg     S.HandleRequest(ctx, msg) with a fresh stream named R (one response expected)
//	S notify msg        S.HandleNotification(msg)
//	S respond msg       S.HandleResponse(msg)
//	read R              wait for the next message on stream R ("S.standalone" is session S's standalone stream)
//	wait R              read stream R until it completes
//	await N             wait until the upstream has received N messages since the steps began
//	connects N          wait until the fake transport's Connect has been called N times
//	up msg              the upstream sends msg on its newest connection
//	twin msg            the twin does
//
// Upstream script: rules, each "on METHOD [contains TEXT]" (or "on response" for a response, or "always on ..."
// for a rule that never wears out) followed by its actions: "< msg" sends msg, "< related=ID msg" sends it as if
// on the HTTP response stream of the request with (upstream) id ID, "!error TEXT" makes the connection's Read
// fail with TEXT. Every message the gateway writes is matched against the unused rules in order;
// the first match fires (and is used up unless "always"). Unmatched initialize and list requests get a plain
// server's answers.
//
// In messages, ${path} is the value at path (dot-separated) in the message that triggered the rule; ${N:path}
// takes it from the N-th message the upstream received since the steps began; ${R:path} from the last message
// read from stream R.
//
// The gateway mints integers (upstream ids and progress tokens, ids of server→client requests): in the want
// sections they are replaced by $uN (upstream side) and $cN (client side), numbered by order of appearance, so a
// repeated placeholder means the same integer.
//
// Run with -update-exchanges to rewrite the want sections from what happened (then review the diff).

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"golang.org/x/tools/txtar"
)

var updateExchanges = flag.Bool("update-exchanges", false, "rewrite the want sections of testdata/exchanges/*.txt")

// section returns the body of a case file's section ("" when it has none).
func section(a *txtar.Archive, name string) string {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

// setSection replaces (or appends) a section of a case file.
func setSection(a *txtar.Archive, name, body string) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = []byte(body)
			return
		}
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(body)})
}

// lines returns the non-blank, non-comment lines of a section.
func lines(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func TestExchanges(t *testing.T) {
	files, err := filepath.Glob("testdata/exchanges/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases in testdata/exchanges")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			a := txtar.Parse(data)
			gotUp, gotClient := runExchange(t, a)
			if *updateExchanges {
				setSection(a, "want upstream", gotUp)
				setSection(a, "want client", gotClient)
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantUp, wantClient := section(a, "want upstream"), section(a, "want client")
			if gotUp != wantUp {
				t.Errorf("upstream traffic differs\n--- got\n%s--- want\n%s%s", gotUp, wantUp, lineDiff(gotUp, wantUp))
			}
			if gotClient != wantClient {
				t.Errorf("client traffic differs\n--- got\n%s--- want\n%s%s", gotClient, wantClient, lineDiff(gotClient, wantClient))
			}
		})
	}
}

// lineDiff points at the first differing line.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("--- first difference, line %d:\n got: %s\nwant: %s\n", i+1, gl, wl)
		}
	}
	return ""
}

// rule is one entry of an upstream script.
type rule struct {
	method   string // "response" matches responses
	contains string
	always   bool
	used     bool
	actions  []string
}

func parseScript(tb testing.TB, body string) []*rule {
	var rules []*rule
	for _, l := range lines(body) {
		switch {
		case strings.HasPrefix(l, "on ") || strings.HasPrefix(l, "always on "):
			r := &rule{always: strings.HasPrefix(l, "always ")}
			rest := strings.TrimPrefix(strings.TrimPrefix(l, "always "), "on ")
			if i := strings.Index(rest, " contains "); i >= 0 {
				r.contains = rest[i+len(" contains "):]
				rest = rest[:i]
			}
			r.method = strings.TrimSpace(rest)
			rules = append(rules, r)
		case strings.HasPrefix(l, "< ") || strings.HasPrefix(l, "!error "):
			if len(rules) == 0 {
				tb.Fatalf("script action before any rule: %s", l)
			}
			rules[len(rules)-1].actions = append(rules[len(rules)-1].actions, l)
		default:
			tb.Fatalf("bad script line: %s", l)
		}
	}
	return rules
}

func (r *rule) matches(m jsonrpc.Message) bool {
	if r.used && !r.always {
		return false
	}
	switch {
	case r.method == "response":
		if m.Kind() != jsonrpc.KindResponse {
			return false
		}
	case !m.MethodIs(r.method):
		return false
	}
	return r.contains == "" || bytes.Contains(m.Raw(), []byte(r.contains))
}

// exchange is the state of one running case.
type exchange struct {
	t        *testing.T
	r        *testRouter
	ft       *fakeTransport
	twin     *fakeTransport // the second upstream, when the case has one
	mark     int            // index in ft.log where the steps began
	twinMark int            // and in twin.log
	sessions map[string]*Session
	streams  map[string]*xStream
	order    []string // stream labels by creation
}

type xStream struct {
	s      *Stream
	id     []byte   // the id of the request the stream answers
	events []string // raw messages, or "end"
	last   []byte
}

var substRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// subst expands ${...} references in a message template.
func (x *exchange) subst(tmpl string, trigger []byte) string {
	return substRE.ReplaceAllStringFunc(tmpl, func(ref string) string {
		ref = ref[2 : len(ref)-1]
		src := trigger
		if i := strings.IndexByte(ref, ':'); i >= 0 {
			from, path := ref[:i], ref[i+1:]
			ref = path
			if n, err := strconv.Atoi(from); err == nil {
				// Called from the fake's handler with ft.mu held: read the log directly.
				if x.mark+n-1 >= len(x.ft.log) || n < 1 {
					x.t.Errorf("${%s:%s}: the upstream has received only %d messages", from, path, len(x.ft.log)-x.mark)
					return "null"
				}
				src = x.ft.log[x.mark+n-1].msg.Raw()
			} else {
				st := x.streams[from]
				if st == nil || st.last == nil {
					x.t.Fatalf("${%s:%s}: nothing read from stream %s", from, path, from)
				}
				src = st.last
			}
		}
		s, e, ok := jsonrpc.Lookup(src, strings.Split(ref, ".")...)
		if !ok {
			x.t.Errorf("${%s}: not found in %s", ref, src)
			return "null"
		}
		return string(src[s:e])
	})
}

// substLocked is subst for the test goroutine: it takes the fake's lock to read what the upstream received.
func (x *exchange) substLocked(tmpl string) string {
	x.ft.mu.Lock()
	defer x.ft.mu.Unlock()
	return x.subst(tmpl, nil)
}

// handle is the fake upstream's script; it runs with ft.mu held.
func (x *exchange) handle(rules []*rule, cfg map[string]string) func(*fakeConn, jsonrpc.Message) {
	caps, tools := cfg["caps"], cfg["tools"]
	// The resource lists the config gives, by list method: the result's member and the list.
	lists := map[string][2]string{
		"resources/list":           {"resources", cfg["resources"]},
		"resources/templates/list": {"resourceTemplates", cfg["templates"]},
	}
	return func(c *fakeConn, m jsonrpc.Message) {
		if l := lists[m.Method()]; m.Kind() == jsonrpc.KindRequest && l[1] != "" {
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"`+l[0]+`":`+l[1]+`}`)))
			return
		}
		if !c.t.armed { // the script is armed only once the steps begin
			defaultAnswer(c, m, caps, tools)
			return
		}
		for _, r := range rules {
			if !r.matches(m) {
				continue
			}
			r.used = true
			for _, act := range r.actions {
				if msg, ok := strings.CutPrefix(act, "< "); ok {
					var related []byte
					if rest, ok := strings.CutPrefix(msg, "related="); ok {
						id, tail, _ := strings.Cut(rest, " ")
						related, msg = []byte(x.subst(id, m.Raw())), tail
					}
					c.sendRelatedLocked([]byte(x.subst(msg, m.Raw())), related)
				} else {
					c.breakLocked(fmt.Errorf("%s", strings.TrimPrefix(act, "!error ")))
				}
			}
			return
		}
		defaultAnswer(c, m, caps, tools)
	}
}

func runExchange(t *testing.T, a *txtar.Archive) (upstreamTraffic, clientTraffic string) {
	cfg := map[string]string{"mode": "shared", "caps": fakeInitCaps, "tools": `[{"name":"add","inputSchema":{"type":"object"}}]`}
	for _, l := range lines(section(a, "config")) {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("bad config line %q", l)
		}
		cfg[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	script, steps := section(a, "upstream script"), section(a, "client")
	x := &exchange{t: t, sessions: map[string]*Session{}, streams: map[string]*xStream{}}
	x.ft = newFakeTransport(x.handle(parseScript(t, script), cfg))
	var opts Options
	if v := cfg["namespacing"]; v != "" {
		if _, err := parseNamespacing(v); err != nil {
			t.Fatal(err)
		}
		opts.ResourceNamespacing = v
	}
	if v := cfg["timeout"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		opts.RequestTimeout = d
	}
	if v := cfg["pagesize"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		opts.PageSize = n
	}
	mode := Shared
	if cfg["mode"] == "per-client" {
		mode = PerClient
	}
	ups := []UpstreamConfig{{Name: "fake", Prefix: "fake__", Mode: mode, Transport: x.ft, Kind: "stdio"}}
	if cfg["twin"] == "yes" {
		twinScript := section(a, "twin script")
		if twinScript == "" {
			twinScript = script
		}
		x.twin = newFakeTransport(x.handle(parseScript(t, twinScript), cfg))
		ups = append(ups, UpstreamConfig{Name: "twin", Prefix: "twin__", Mode: mode, Transport: x.twin, Kind: "stdio"})
	}
	x.r = startRouter(t, opts, ups...)
	x.ft.mu.Lock()
	x.mark = len(x.ft.log)
	x.ft.armed = true
	x.ft.mu.Unlock()
	if x.twin != nil {
		x.twin.mu.Lock()
		x.twinMark = len(x.twin.log)
		x.twin.armed = true
		x.twin.mu.Unlock()
	}

	for _, step := range lines(steps) {
		x.step(step)
	}
	// Anything that arrived without being read, in particular after a stream completed, is part of the result.
	for _, label := range x.order {
		st := x.streams[label]
		for {
			msg, _, ok := st.s.TryNext()
			if !ok {
				break
			}
			st.events = append(st.events, string(msg))
		}
	}
	return x.upstreamTraffic(), x.clientTraffic()
}

func (x *exchange) session(name string) *Session {
	if s := x.sessions[name]; s != nil {
		return s
	}
	return x.newSession(name, defaultClientCaps)
}

func (x *exchange) newSession(name, caps string) *Session {
	s := x.r.session(caps)
	x.sessions[name] = s
	label := name + ".standalone"
	x.streams[label] = &xStream{s: s.Standalone()}
	x.order = append(x.order, label)
	return s
}

func (x *exchange) stream(label string) *xStream {
	st := x.streams[label]
	if st == nil {
		x.t.Fatalf("unknown stream %q", label)
	}
	return st
}

func (x *exchange) step(step string) {
	t := x.t
	t.Helper()
	f := strings.SplitN(step, " ", 3)
	fieldsAt := func(n int) []string {
		if len(f) < n {
			t.Fatalf("bad step %q", step)
		}
		return f
	}
	switch f[0] {
	case "new":
		f = strings.SplitN(step, " ", 3)
		fieldsAt(3)
		x.newSession(f[1], f[2])
	case "modern":
		f = strings.SplitN(step, " ", 3)
		fieldsAt(3)
		x.sessions[f[1]] = x.r.PooledSession(SessionParams{Capabilities: json.RawMessage(f[2])})
	case "read":
		fieldsAt(2)
		st := x.stream(f[1])
		msg, _, ok := st.s.Next(x.r.ctx)
		if !ok {
			t.Fatalf("%s: stream %s ended (or the test timed out) with nothing to read", step, f[1])
		}
		st.events, st.last = append(st.events, string(msg)), msg
	case "wait":
		fieldsAt(2)
		st := x.stream(f[1])
		for {
			msg, _, ok := st.s.Next(x.r.ctx)
			if !ok {
				break
			}
			st.events, st.last = append(st.events, string(msg)), msg
		}
		if x.r.ctx.Err() != nil {
			t.Fatalf("%s: gave up waiting", step)
		}
		st.events = append(st.events, "end")
	case "await":
		n, err := strconv.Atoi(fieldsAt(2)[1])
		if err != nil {
			t.Fatalf("bad step %q", step)
		}
		x.ft.waitFor(x.r.ctx, t, step, func() bool { return len(x.ft.log)-x.mark >= n })
	case "connects":
		n, err := strconv.Atoi(fieldsAt(2)[1])
		if err != nil {
			t.Fatalf("bad step %q", step)
		}
		x.ft.waitFor(x.r.ctx, t, step, func() bool { return x.ft.connects >= n })
	case "up":
		msg := strings.TrimSpace(strings.TrimPrefix(step, "up"))
		x.ft.inject([]byte(x.substLocked(msg)))
	case "twin":
		if x.twin == nil {
			t.Fatalf("%s: the case has no twin (config twin: yes)", step)
		}
		x.twin.inject([]byte(strings.TrimSpace(strings.TrimPrefix(step, "twin"))))
	default:
		// S request R msg | S notify msg | S respond msg
		if len(f) < 3 {
			t.Fatalf("bad step %q", step)
		}
		s := x.session(f[0])
		switch f[1] {
		case "request":
			label, msg, ok := strings.Cut(f[2], " ")
			if !ok {
				t.Fatalf("bad step %q", step)
			}
			if x.streams[label] != nil {
				t.Fatalf("stream %s already exists", label)
			}
			m := mustParse(t, x.substLocked(msg))
			st := &xStream{s: newStream(1, 256), id: m.ID()}
			x.streams[label] = st
			x.order = append(x.order, label)
			s.HandleRequest(context.Background(), m, st.s)
		case "close":
			st := x.stream(f[2])
			st.s.Close()
			s.Cancel(st.s, st.id, "the client closed the stream")
		case "notify":
			s.HandleNotification(mustParse(t, x.substLocked(f[2])))
		case "respond":
			s.HandleResponse(mustParse(t, x.substLocked(f[2])))
		default:
			t.Fatalf("bad step %q", step)
		}
	}
}

// placeholders numbers the gateway-minted integers by order of appearance.
type placeholders struct {
	prefix string
	seen   map[string]string
}

func (p *placeholders) name(v []byte) []byte {
	if _, ok := jsonrpc.ParseInt(v); !ok {
		return v // not an integer the gateway minted: shown as it is, so the difference is visible
	}
	if p.seen == nil {
		p.seen = map[string]string{}
	}
	n, ok := p.seen[string(v)]
	if !ok {
		n = fmt.Sprintf("$%s%d", p.prefix, len(p.seen)+1)
		p.seen[string(v)] = n
	}
	return []byte(n)
}

// normalise replaces the values at the given paths of raw (when present) by placeholders.
func normalise(raw []byte, p *placeholders, paths ...[]string) string {
	var edits []jsonrpc.Edit
	for _, path := range paths {
		if s, e, ok := jsonrpc.Lookup(raw, path...); ok {
			edits = append(edits, jsonrpc.Edit{Start: s, End: e, With: p.name(raw[s:e])})
		}
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].Start < edits[j].Start })
	return string(jsonrpc.Splice(nil, raw, edits...))
}

var (
	pathID    = []string{"id"}
	pathToken = []string{"params", "_meta", "progressToken"}
	pathReqID = []string{"params", "requestId"}
)

func (x *exchange) upstreamTraffic() string {
	p := &placeholders{prefix: "u"}
	var b strings.Builder
	x.traffic(&b, p, x.ft, x.mark, "")
	if x.twin != nil {
		x.traffic(&b, p, x.twin, x.twinMark, "twin")
	}
	return b.String()
}

// traffic writes what one fake upstream received since mark, each line labelled with label.
func (x *exchange) traffic(b *strings.Builder, p *placeholders, ft *fakeTransport, mark int, label string) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, rec := range ft.log[mark:] {
		m := rec.msg
		var paths [][]string
		if m.Kind() == jsonrpc.KindRequest {
			paths = append(paths, pathID, pathToken)
		}
		if m.MethodIs("notifications/cancelled") {
			paths = append(paths, pathReqID)
		}
		fmt.Fprintf(b, "%s#%d %s\n", label, rec.conn, normalise(m.Raw(), p, paths...))
	}
}

// elapsedRE hides the elapsed time the gateway reports in timeout errors ("within 0s", "after 51ms in all").
var elapsedRE = regexp.MustCompile(`(within|after) [0-9.]+(ns|µs|ms|s|m|h)+`)

// stateRE hides a requestState the gateway sealed (a random nonce makes each one different).
var stateRE = regexp.MustCompile(`"requestState":"[^"]*"`)

func (x *exchange) clientTraffic() string {
	p := &placeholders{prefix: "c"}
	var b strings.Builder
	for _, label := range x.order {
		for _, ev := range x.streams[label].events {
			if ev == "end" {
				fmt.Fprintf(&b, "%s end\n", label)
				continue
			}
			m, err := jsonrpc.Parse([]byte(ev))
			if err != nil {
				x.t.Errorf("stream %s got an invalid message %s: %v", label, ev, err)
				fmt.Fprintf(&b, "%s %s\n", label, ev)
				continue
			}
			var paths [][]string
			if m.Kind() == jsonrpc.KindRequest {
				paths = append(paths, pathID)
			}
			if m.MethodIs("notifications/cancelled") {
				paths = append(paths, pathReqID)
			}
			line := elapsedRE.ReplaceAllString(normalise(m.Raw(), p, paths...), "$1 <elapsed>")
			fmt.Fprintf(&b, "%s %s\n", label, stateRE.ReplaceAllString(line, `"requestState":"<sealed>"`))
		}
	}
	return b.String()
}

package auth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/switchboard-mcp/switchboard/auth/jcs"
)

// AuditVerifyOptions change what VerifyAuditLog accepts.
type AuditVerifyOptions struct {
	// AllowTruncatedHead accepts a stream whose first record in the log has a seq above 1, as a rotated log's
	// later file has; that record's prev cannot be checked. Without it such a stream is broken: records 1 to N-1
	// are missing, and a verifier that accepted that silently would miss a deleted head.
	AllowTruncatedHead bool
}

// AuditBreakKind says what is wrong where a chain breaks.
type AuditBreakKind string

// The kinds of break.
const (
	// AuditAltered: the record's hash does not match its contents. It was edited, or the log handler adds or
	// rewrites fields (see Auditor).
	AuditAltered AuditBreakKind = "altered"
	// AuditRelinked: the record's prev is not the hash of the record before it (a record replaced with a
	// recomputed hash, or a first record given a prev).
	AuditRelinked AuditBreakKind = "relinked"
	// AuditMissing: records are missing between two records of the stream.
	AuditMissing AuditBreakKind = "missing"
	// AuditReordered: a record comes after one with a higher seq (moved or repeated records).
	AuditReordered AuditBreakKind = "reordered"
	// AuditTruncatedHead: the stream's first record in the log is not seq 1 (see AllowTruncatedHead).
	AuditTruncatedHead AuditBreakKind = "truncated-head"
	// AuditMalformed: a line that is an audit record of a chain, or looks like one, cannot be read as one.
	AuditMalformed AuditBreakKind = "malformed"
)

// AuditBreak is where a stream's chain breaks first.
type AuditBreak struct {
	Kind AuditBreakKind
	// Line is the 1-based line of the record at which the chain breaks.
	Line int
	// Seq is that record's seq (0 when unreadable).
	Seq uint64
	// Detail says what is wrong, in words a person can act on.
	Detail string
}

// AuditStream is what VerifyAuditLog found of one stream.
type AuditStream struct {
	// ID is the stream field of its records.
	ID string
	// Records counts the stream's records in the log.
	Records int
	// FirstLine and LastLine are the lines of its first and last records.
	FirstLine, LastLine int
	// FirstSeq and LastSeq are the seqs of its first and last records in the log's order.
	FirstSeq, LastSeq uint64
	// Break is its first break; nil when the stream is intact.
	Break *AuditBreak
}

// AuditReport is the result of VerifyAuditLog.
type AuditReport struct {
	// Streams are the chains found, in the order of their first records.
	Streams []*AuditStream
	// Unchained counts audit records without a chain (written before chaining existed); they are not checked.
	Unchained int
	// Malformed lists lines that look like audit records but cannot be read, so cannot be given to a stream.
	Malformed []AuditBreak
}

// Intact says the log holds at least one chained record and nothing is broken or malformed.
func (r *AuditReport) Intact() bool {
	if len(r.Streams) == 0 || len(r.Malformed) > 0 {
		return false
	}
	for _, s := range r.Streams {
		if s.Break != nil {
			return false
		}
	}
	return true
}

// chain is a stream being verified.
type chain struct {
	out      *AuditStream
	lastSeq  uint64
	lastHash string
	lastLine int
	// While the break is AuditMissing, a later record with a seq in gapFrom..gapTo turns it into AuditReordered.
	gapFrom, gapTo uint64
}

// VerifyAuditLog reads a log of JSON lines (log.format: json), checks the chain of every stream of audit records
// in it and reports the first break of each. Lines that are not audit records are skipped, as are audit records
// without a chain. Within a stream the records must be in the order they were written: seq 1, 2, 3… each with the
// hash of the one before as prev and a hash that matches its contents (see AuditCanonical).
//
// It keeps a few values per stream, not the records, so a log of any size can be verified. The error is only
// for failing to read r.
func VerifyAuditLog(r io.Reader, opts AuditVerifyOptions) (*AuditReport, error) {
	rep := &AuditReport{}
	chains := map[string]*chain{}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer: gather it
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			verifyLine(rep, chains, n, line, opts)
		}
		if err == io.EOF {
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("reading line %d: %w", n, err)
		}
	}
}

// verifyLine checks one line of the log.
func verifyLine(rep *AuditReport, chains map[string]*chain, n int, line []byte, opts AuditVerifyOptions) {
	line = bytes.TrimSpace(line)
	// Most lines are not audit records: skip them before parsing.
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(`"`+AuditMessage+`"`)) {
		return
	}
	members, err := parseJSONObject(line)
	if err != nil {
		if bytes.Contains(line, []byte(`"msg":"`+AuditMessage+`"`)) {
			rep.Malformed = append(rep.Malformed, AuditBreak{Kind: AuditMalformed, Line: n,
				Detail: fmt.Sprintf("line %d looks like an audit record but is not one JSON object: %v", n, err)})
		}
		return
	}
	if s, _ := members.Get("msg").(string); s != AuditMessage {
		return
	}
	streamVal := members.Get(AuditKeyStream)
	if streamVal == nil {
		rep.Unchained++
		return
	}
	stream, ok := streamVal.(string)
	if !ok || stream == "" {
		rep.Malformed = append(rep.Malformed, AuditBreak{Kind: AuditMalformed, Line: n,
			Detail: fmt.Sprintf("line %d is an audit record whose %s is not a non-empty string", n, AuditKeyStream)})
		return
	}
	c := chains[stream]
	if c == nil {
		c = &chain{out: &AuditStream{ID: stream, FirstLine: n}}
		chains[stream] = c
		rep.Streams = append(rep.Streams, c.out)
	}
	seq, prev, hash, err := chainFields(members)
	first := c.out.Records == 0
	c.out.Records++
	c.out.LastLine = n
	if err != nil {
		if c.out.Break == nil {
			c.out.Break = &AuditBreak{Kind: AuditMalformed, Line: n, Detail: fmt.Sprintf("the record on line %d: %v", n, err)}
		}
		return
	}
	if first {
		c.out.FirstSeq = seq
	}
	c.out.LastSeq = seq
	if b := c.out.Break; b != nil {
		if b.Kind == AuditMissing && seq >= c.gapFrom && seq <= c.gapTo {
			b.Kind = AuditReordered
			b.Detail = fmt.Sprintf("records are out of order: seq %d on line %d comes before seq %d on line %d", b.Seq, b.Line, seq, n)
		}
		return
	}
	c.out.Break = c.check(n, seq, prev, hash, canonicalHash(members), first, opts)
	c.lastSeq, c.lastHash, c.lastLine = seq, hash, n
}

// check returns the break at a record of the chain, or nil when it follows the record before.
func (c *chain) check(n int, seq uint64, prev, hash, computed string, first bool, opts AuditVerifyOptions) *AuditBreak {
	brk := func(kind AuditBreakKind, format string, args ...any) *AuditBreak {
		return &AuditBreak{Kind: kind, Line: n, Seq: seq, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case computed != hash:
		return brk(AuditAltered, "seq %d on line %d was altered: its hash does not match its contents (or the log handler adds or rewrites fields)", seq, n)
	case first && seq == 1 && prev != "":
		return brk(AuditRelinked, "seq %d on line %d has a prev, but a stream's first record has none: records before it were removed and the rest rewritten", seq, n)
	case first && seq > 1 && !opts.AllowTruncatedHead:
		return brk(AuditTruncatedHead, "the stream starts at seq %d on line %d: %s not in this log (deleted, or in an older file of a rotated log: verify the files together, or pass --allow-truncated-head)", seq, n, seqRange(1, seq-1))
	case first:
		return nil
	case seq == c.lastSeq+1 && prev != c.lastHash:
		return brk(AuditRelinked, "seq %d on line %d does not follow seq %d on line %d: its prev is not that record's hash (a record between them was replaced, or seq %d was rewritten)", seq, n, c.lastSeq, c.lastLine, c.lastSeq)
	case seq == c.lastSeq+1:
		return nil
	case seq > c.lastSeq+1:
		c.gapFrom, c.gapTo = c.lastSeq+1, seq-1
		return brk(AuditMissing, "%s missing between line %d (seq %d) and line %d (seq %d)", seqRange(c.gapFrom, c.gapTo), c.lastLine, c.lastSeq, n, seq)
	default:
		return brk(AuditReordered, "records are out of order or repeated: seq %d on line %d comes after seq %d on line %d", seq, n, c.lastSeq, c.lastLine)
	}
}

// seqRange names missing records.
func seqRange(from, to uint64) string {
	if from == to {
		return fmt.Sprintf("seq %d is", from)
	}
	return fmt.Sprintf("seq %d..%d (%d records) are", from, to, to-from+1)
}

// chainFields reads seq, prev and hash of a record.
func chainFields(members jcs.Object) (seq uint64, prev, hash string, err error) {
	num, ok := members.Get(AuditKeySeq).(json.Number)
	if !ok {
		return 0, "", "", fmt.Errorf("%s is missing or not a number", AuditKeySeq)
	}
	if seq, err = strconv.ParseUint(string(num), 10, 64); err != nil || seq == 0 {
		return 0, "", "", fmt.Errorf("%s %s is not a positive integer", AuditKeySeq, num)
	}
	if prev, ok = members.Get(AuditKeyPrev).(string); !ok {
		return 0, "", "", fmt.Errorf("%s is missing or not a string", AuditKeyPrev)
	}
	if hash, ok = members.Get(AuditKeyHash).(string); !ok {
		return 0, "", "", fmt.Errorf("%s is missing or not a string", AuditKeyHash)
	}
	return seq, prev, hash, nil
}

// canonicalHash is the hash a record should carry, "" when it has no canonical form.
func canonicalHash(members jcs.Object) string {
	b, err := jcs.Append(nil, withoutHash(members))
	if err != nil {
		return ""
	}
	return hashOf(b)
}

// AuditCanonical returns the canonical form of an audit record, whose SHA-256 is its hash: the record as a JSON
// object (one line of the log) without its hash member, written as RFC 8785 (JSON Canonicalization Scheme) writes
// it: members sorted by key, no whitespace, strings with minimal escaping, numbers as ECMAScript writes doubles.
// A line with a member twice has no canonical form, as it could be read two ways.
func AuditCanonical(line []byte) ([]byte, error) {
	members, err := parseJSONObject(line)
	if err != nil {
		return nil, err
	}
	return jcs.Append(nil, withoutHash(members))
}

func withoutHash(members jcs.Object) jcs.Object {
	return slices.DeleteFunc(slices.Clone(members), func(m jcs.Member) bool { return m.Key == AuditKeyHash })
}

// parseJSONObject parses one JSON object and nothing after it, refusing duplicate keys at any depth.
func parseJSONObject(b []byte) (jcs.Object, error) {
	v, err := jcs.Parse(b)
	if err != nil {
		return nil, err
	}
	o, ok := v.(jcs.Object)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

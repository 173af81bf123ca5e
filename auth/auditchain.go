package auth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/jcs"
)

// The keys of an audit record that make its chain. Every record has all four; prev is "" at seq 1.
const (
	// AuditKeyStream is the key of the record's stream id: one chain per Auditor (per process and replica).
	AuditKeyStream = "stream"
	// AuditKeySeq is the key of the record's position in its stream, from 1.
	AuditKeySeq = "seq"
	// AuditKeyPrev is the key of the hash of the stream's previous record ("" for seq 1).
	AuditKeyPrev = "prev"
	// AuditKeyHash is the key of the record's own hash: "sha256:" and the hex SHA-256 of AuditCanonical of the
	// record without this key.
	AuditKeyHash = "hash"
	// AuditMessage is the msg of every audit record.
	AuditMessage = "audit"
)

// hashPrefix names the algorithm in a hash value, as pin hashes do.
const hashPrefix = "sha256:"

// emit writes one record of the chain: it adds stream, seq, prev and hash to attrs and hands the record to the
// logger's handler, all under a.mu so records reach the log in chain order. The work under the lock is fixed
// (about 20 attributes, one SHA-256 of a few hundred bytes) and reuses a.buf and a.keys.
func (a *Auditor) emit(ctx context.Context, level slog.Level, attrs []slog.Attr) {
	h := a.log.Handler()
	// A record the handler would drop (log.level above it) takes no seq, or the chain would show a hole.
	if !h.Enabled(ctx, level) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now() // under the lock, so times follow the chain's order
	seq := a.seq + 1
	attrs = append(attrs, slog.String(AuditKeyStream, a.stream), slog.Uint64(AuditKeySeq, seq), slog.String(AuditKeyPrev, a.prev))
	hash := a.hash(now, level, attrs)
	attrs = append(attrs, slog.String(AuditKeyHash, hash))
	r := slog.NewRecord(now, level, AuditMessage, 0)
	r.AddAttrs(attrs...)
	// A record lost to a write error still advances the chain: the verifier then reports it missing, which is
	// the truth, where reusing its seq would hide the loss.
	_ = h.Handle(ctx, r)
	a.seq, a.prev = seq, hash
}

// hash is the record's hash: that of the canonical form of the JSON object slog.JSONHandler writes for it, which
// holds time, level and msg besides attrs.
func (a *Auditor) hash(now time.Time, level slog.Level, attrs []slog.Attr) string {
	a.keys = append(a.keys[:0], attrs...)
	a.keys = append(a.keys, slog.Time(slog.TimeKey, now), slog.String(slog.LevelKey, level.String()), slog.String(slog.MessageKey, AuditMessage))
	// The keys are ASCII, for which byte order is AuditCanonical's UTF-16 order.
	slices.SortFunc(a.keys, func(x, y slog.Attr) int { return cmp.Compare(x.Key, y.Key) })
	b := append(a.buf[:0], '{')
	for i, at := range a.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jcs.AppendString(b, at.Key)
		b = append(b, ':')
		b = appendSlogValue(b, at.Value)
	}
	b = append(b, '}')
	a.buf = b
	clear(a.keys) // hold no strings of this record until the next
	return hashOf(b)
}

// hashOf formats the hash of a canonical form.
func hashOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	var out [len(hashPrefix) + 2*sha256.Size]byte
	copy(out[:], hashPrefix)
	hex.Encode(out[len(hashPrefix):], sum[:])
	return string(out[:])
}

// appendSlogValue appends v as AuditCanonical writes the value slog.JSONHandler writes for it. Only the kinds
// audit records use are needed: the JSON handler writes a time in RFC 3339 with nanoseconds and numbers as JSON
// numbers, which the canonical form rewrites as doubles.
func appendSlogValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return jcs.AppendString(b, v.String())
	case slog.KindInt64:
		return jcs.AppendNumber(b, float64(v.Int64()))
	case slog.KindUint64:
		return jcs.AppendNumber(b, float64(v.Uint64()))
	case slog.KindFloat64:
		return jcs.AppendNumber(b, v.Float64())
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().Round(0).AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	default: // not used by audit records
		return jcs.AppendString(b, v.String())
	}
}

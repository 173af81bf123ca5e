package auth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
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
		b = appendJCSString(b, at.Key)
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
		return appendJCSString(b, v.String())
	case slog.KindInt64:
		return appendJCSNumber(b, float64(v.Int64()))
	case slog.KindUint64:
		return appendJCSNumber(b, float64(v.Uint64()))
	case slog.KindFloat64:
		return appendJCSNumber(b, v.Float64())
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().Round(0).AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	default: // not used by audit records
		return appendJCSString(b, v.String())
	}
}

// appendJCSString appends s as RFC 8785 writes a string: only '"', '\\' and the control characters are escaped,
// with the short escapes where JSON has them and \u00xx (lower-case hex) for the rest. s is valid UTF-8.
func appendJCSString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(b, '"')
}

// appendJCSNumber appends f as RFC 8785 writes a number, which is ECMAScript's Number.prototype.toString: the
// shortest decimal that reads back as f, in plain notation from 1e-6 up to 1e21 and in exponent notation (1e-7,
// 1e+21) outside, and 0 for -0. It is what encoding/json writes for a float64 too.
func appendJCSNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Go writes e-07 where ECMAScript writes e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 sorts object members.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			// A rune above U+FFFF starts with a high surrogate (U+D800..U+DBFF), which sorts below U+E000..U+FFFF.
			if ha, hb := firstUTF16(ra), firstUTF16(rb); ha != hb {
				return cmp.Compare(ha, hb)
			}
			return cmp.Compare(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// firstUTF16 is the first UTF-16 code unit of r.
func firstUTF16(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

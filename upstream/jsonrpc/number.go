package jsonrpc

import "strconv"

// AppendInt appends the decimal JSON literal of n.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// ParseInt parses a JSON integer literal (no fraction, exponent, quotes or
// surrounding whitespace) that fits an int64. It does not allocate.
func ParseInt(v []byte) (int64, bool) {
	neg := false
	i := 0
	if len(v) > 0 && v[0] == '-' {
		neg = true
		i = 1
	}
	if i >= len(v) || (v[i] == '0' && len(v) > i+1) {
		return 0, false
	}
	const cutoff = uint64(1) << 63
	var u uint64
	for ; i < len(v); i++ {
		c := v[i]
		if !isDigit(c) {
			return 0, false
		}
		if u > (cutoff)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > cutoff {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to MinInt64, as intended
	}
	if u == cutoff {
		return 0, false
	}
	return int64(u), true
}

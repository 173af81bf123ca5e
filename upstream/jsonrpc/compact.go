package jsonrpc

// Compact appends src to dst with whitespace outside strings removed and
// returns the extended slice. The result contains no raw newline (JSON
// strings cannot hold one unescaped), which is what newline-delimited stdio
// framing needs. src should be valid JSON; for invalid input Compact still
// does not panic, but its output is unspecified. When src has no whitespace
// outside strings it is appended unchanged in one copy.
func Compact(dst, src []byte) []byte {
	start := 0 // start of the pending run to copy
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inStr {
			switch c {
			case '\\':
				i++ // skip the escaped byte; it may be a quote
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	if start < len(src) {
		dst = append(dst, src[start:]...)
	}
	return dst
}

package jsonrpc

// IsBatch reports whether b looks like a batch: its first non-whitespace
// byte is '['. It does not validate.
func IsBatch(b []byte) bool {
	i := skipWS(b, 0)
	return i < len(b) && b[i] == '['
}

// SplitBatch validates the JSON array b and returns its elements as
// sub-slices of b (aliased, trimmed of whitespace). Elements are not checked
// to be messages; Parse each one. It returns an error wrapping ErrParse if b
// is not valid JSON and ErrInvalidRequest if it is not an array or the array
// is empty.
func SplitBatch(b []byte) ([][]byte, error) {
	i := skipWS(b, 0)
	end, err := scanValue(b, i, 0)
	if err != nil {
		return nil, err
	}
	if t := skipWS(b, end); t != len(b) {
		return nil, syntaxErr(t, "data after top-level value")
	}
	if b[i] != '[' {
		return nil, invalidErr("batch is not an array")
	}
	i = skipWS(b, i+1)
	if b[i] == ']' {
		return nil, invalidErr("empty batch")
	}
	var out [][]byte
	for {
		// The array is valid, so each element is too and the scan succeeds.
		e, err := scanValue(b, i, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, b[i:e:e])
		i = skipWS(b, e)
		if b[i] == ']' {
			return out, nil
		}
		i = skipWS(b, i+1) // ','
	}
}

package jsonrpc

// The constructors below append a complete message. id, params, result and
// data are raw JSON supplied by the caller and are copied verbatim, so they
// must already be valid (for instance taken from a parsed Message or built
// with AppendQuote/AppendInt). The output is compact if the inputs are.

// AppendRequest appends a request. A nil id omits the member (producing a
// notification); nil params omits "params".
func AppendRequest(dst, id []byte, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	if id != nil {
		dst = append(dst, `,"id":`...)
		dst = append(dst, id...)
	}
	dst = append(dst, `,"method":`...)
	dst = AppendQuote(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// AppendNotification appends a notification; nil params omits "params".
func AppendNotification(dst []byte, method string, params []byte) []byte {
	return AppendRequest(dst, nil, method, params)
}

// AppendResult appends a success response. id should not be nil (a result
// with a null id is invalid); nil is written as null so the output is at
// least valid JSON. A nil result is written as null.
func AppendResult(dst, id []byte, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendOrNull(dst, id)
	dst = append(dst, `,"result":`...)
	dst = appendOrNull(dst, result)
	return append(dst, '}')
}

// AppendError appends an error response. A nil id is written as null (for
// errors about messages whose id could not be read); nil data omits "data".
func AppendError(dst, id []byte, code int, message string, data []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendOrNull(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = AppendInt(dst, int64(code))
	dst = append(dst, `,"message":`...)
	dst = AppendQuote(dst, message)
	if data != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, data...)
	}
	return append(dst, "}}"...)
}

func appendOrNull(dst, v []byte) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	return append(dst, v...)
}

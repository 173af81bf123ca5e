package sse

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// AppendEvent appends the encoding of e to dst and returns the extended
// slice: optional "id:", "event:" and "retry:" lines, one "data:" line per
// line of Data, then a blank line. At least one data line is always written
// (an empty one for empty Data), so every encoded event, including an
// id-only "priming" event, is dispatched by conforming readers.
//
// An id line is written if HasID is set or ID is non-empty. Because CR and
// LF end a field, they are removed from ID and Name, as is NUL from ID (a
// reader ignores an id containing NUL). Data is split on LF, CRLF and CR, so
// a reader gets CR and CRLF back as LF. Retry is written in whole
// milliseconds when positive. AppendEvent does not allocate when dst has
// enough capacity.
func AppendEvent(dst []byte, e Event) []byte {
	if e.HasID || e.ID != "" {
		dst = appendField(dst, "id", e.ID, "\r\n\x00")
	}
	if e.Name != "" {
		dst = appendField(dst, "event", e.Name, "\r\n")
	}
	if e.Retry > 0 {
		dst = append(dst, "retry: "...)
		dst = strconv.AppendInt(dst, int64(e.Retry/time.Millisecond), 10)
		dst = append(dst, '\n')
	}
	data := e.Data
	for {
		i := indexEOL(data)
		if i < 0 {
			dst = appendDataLine(dst, data)
			break
		}
		dst = appendDataLine(dst, data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n')
}

func appendDataLine(dst, line []byte) []byte {
	dst = append(dst, "data"...)
	if len(line) > 0 {
		dst = append(dst, ':', ' ')
		dst = append(dst, line...)
	} else {
		dst = append(dst, ':')
	}
	return append(dst, '\n')
}

// appendField writes "name: value\n" with the bytes in drop removed from
// value.
func appendField(dst []byte, name, value, drop string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':')
	if value != "" {
		dst = append(dst, ' ')
	}
	for value != "" {
		i := strings.IndexAny(value, drop)
		if i < 0 {
			dst = append(dst, value...)
			break
		}
		dst = append(dst, value[:i]...)
		value = value[i+1:]
	}
	return append(dst, '\n')
}

// AppendComment appends a comment, typically used as a keep-alive; each
// line of text becomes one ": " line, followed by a blank line.
func AppendComment(dst []byte, text string) []byte {
	for {
		i := strings.IndexAny(text, "\r\n")
		line := text
		if i >= 0 {
			line = text[:i]
		}
		dst = append(dst, ':')
		if line != "" {
			dst = append(dst, ' ')
			dst = append(dst, line...)
		}
		dst = append(dst, '\n')
		if i < 0 {
			break
		}
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return append(dst, '\n')
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	return bytes.IndexAny(b, "\r\n")
}

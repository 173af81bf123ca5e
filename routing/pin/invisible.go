package pin

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// invisible reports whether r renders as nothing (or reorders what follows) in most fonts: format characters
// (zero-width spaces and joiners, the bidirectional controls and isolates, the tag characters that can spell out a
// hidden ASCII message), variation selectors, and the Hangul fillers that render as blank.
func invisible(r rune) bool {
	switch {
	case unicode.Is(unicode.Cf, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0: // Hangul fillers
		return true
	}
	return false
}

// emojiPart reports whether r, after prev (the last character kept), is part of an emoji sequence rather than
// hidden: a variation selector right after a symbol or a keycap's character, or a zero-width joiner after a
// symbol or its selector (❤️‍🔥 is U+2764 U+FE0F U+200D U+1F525).
func emojiPart(prev, r rune) bool {
	symbol := unicode.In(prev, unicode.So, unicode.Sk)
	switch r {
	case 0xFE0E, 0xFE0F:
		return symbol || prev == '#' || prev == '*' || (prev >= '0' && prev <= '9')
	case 0x200D:
		return symbol || prev == 0xFE0F
	}
	return false
}

// Hidden calls f for each invisible character of s that is not part of an emoji sequence, with its byte offset:
// the one rule of what pinning reports and strips and what the console shows. A hidden character is no context for
// the next: "a" U+FE0F U+200D hides both.
func Hidden(s string, f func(i int, r rune)) {
	prev := rune(-1)
	for i, r := range s {
		if invisible(r) && !emojiPart(prev, r) {
			f(i, r)
			prev = -1
			continue
		}
		prev = r
	}
}

// Invisible lists the invisible or bidirectional-control characters in s, each once, as U+XXXX, in the order
// they first appear; nil when there are none.
func Invisible(s string) []string {
	var out []string
	seen := map[rune]bool{}
	Hidden(s, func(_ int, r rune) {
		if !seen[r] {
			seen[r] = true
			out = append(out, fmt.Sprintf("U+%04X", r))
		}
	})
	return out
}

// Strip returns s without its invisible and bidirectional-control characters (emoji sequences are kept whole).
// Stray bytes of invalid UTF-8 are kept; since removing a character from between them can join them into a new
// one, perhaps of the very kind stripped, Strip repeats until nothing is left to strip.
func Strip(s string) string {
	for {
		t := stripOnce(s)
		if t == s {
			return s
		}
		s = t
	}
}

func stripOnce(s string) string {
	var b strings.Builder
	last := 0
	Hidden(s, func(i int, r rune) {
		b.WriteString(s[last:i])
		last = i + utf8.RuneLen(r)
	})
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

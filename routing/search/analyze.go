package search

import (
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

const (
	// maxTokenBytes drops longer tokens: base64 blobs, hashes and URLs run together say nothing a user types, and
	// the cap keeps one hostile description from filling the vocabulary with huge terms.
	maxTokenBytes = 64
	// maxFieldBytes is how much of one field's text is analysed. Real descriptions stay under 8 KiB; an upstream
	// sending megabytes gets its first part indexed instead of costing the gateway memory.
	maxFieldBytes = 32 << 10
)

// analyzer turns text into terms. It caches each raw token's term, so that a catalog's vocabulary is lowercased,
// checked against the stop words and stemmed once, and so that docs share one string per term. An analyzer is
// used by one goroutine at a time; each Build, With and Search has its own.
type analyzer struct {
	env   *snowballstem.Env
	terms map[string]string // lowercased token → term, "" when dropped
	word  []rune            // the current run of letters and digits
	cjk   []rune            // the current run of CJK characters
	buf   []byte            // scratch for one lowercased token
	out   []string
}

func newAnalyzer() *analyzer {
	return &analyzer{env: snowballstem.NewEnv(""), terms: make(map[string]string)}
}

// analyze returns the terms of s, in order, with repeats. The slice is reused by the next call.
func (a *analyzer) analyze(s string) []string {
	a.out = a.out[:0]
	a.add(s)
	return a.out
}

// add appends the terms of s to a.out.
func (a *analyzer) add(s string) {
	if len(s) > maxFieldBytes {
		s = s[:maxFieldBytes] // a rune cut in two decodes as an error: a separator
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size <= 1 {
			a.flushWord()
			a.flushCJK()
			continue
		}
		// Fullwidth forms of ASCII (common in CJK text) are the same letters.
		if r >= 0xFF01 && r <= 0xFF5E {
			r -= 0xFEE0
		}
		switch {
		case isCJK(r):
			a.flushWord()
			a.cjk = append(a.cjk, r)
		case unicode.IsMark(r):
			// A combining mark belongs to the letter before it; in a CJK run (a voicing mark) it is dropped.
			if len(a.word) > 0 {
				a.word = append(a.word, r)
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			a.flushCJK()
			a.word = append(a.word, r)
		default:
			a.flushWord()
			a.flushCJK()
		}
	}
	a.flushWord()
	a.flushCJK()
}

// isCJK reports the scripts written without spaces between words, which are indexed as bigrams.
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r == 0x30FC // the prolonged sound mark, whose script is Common, inside Katakana words
}

// flushWord splits the pending run of letters and digits into the parts of an identifier and emits each. A part
// that mixes letters and digits ("oauth2", "k8s", "base64") is emitted whole and then split at each change between
// letters and digits, so that both "k8s" and "oauth" find it.
func (a *analyzer) flushWord() {
	w := a.word
	if len(w) == 0 {
		return
	}
	start := 0
	for i := 1; i <= len(w); i++ {
		if i < len(w) && !caseBoundary(w, i) {
			continue
		}
		part := w[start:i]
		if mixed(part) {
			a.emit(part)
			from := 0
			for j := 1; j <= len(part); j++ {
				if j == len(part) || unicode.IsDigit(part[j-1]) != unicode.IsDigit(part[j]) && !unicode.IsMark(part[j]) {
					a.emit(part[from:j])
					from = j
				}
			}
		} else {
			a.emit(part)
		}
		start = i
	}
	a.word = a.word[:0]
}

// caseBoundary reports whether a new part of an identifier starts at w[i]: at a change from lower case or a digit
// to upper case ("createIssue", "base64Encode"), and before the last capital of an acronym that a word follows
// ("HTTPServer" → HTTP, Server), except where a single lower-case letter follows: an acronym's plural ("APIs") or
// suffix ("IPv6").
func caseBoundary(w []rune, i int) bool {
	prev, cur := w[i-1], w[i]
	if !unicode.IsUpper(cur) && !unicode.IsTitle(cur) {
		return false
	}
	if unicode.IsLower(prev) || unicode.IsDigit(prev) {
		return true
	}
	if unicode.IsUpper(prev) && i+1 < len(w) && unicode.IsLower(w[i+1]) {
		suffix := i+2 == len(w) || !unicode.IsLower(w[i+2])
		return !suffix
	}
	return false
}

// mixed reports whether part has both digits and letters.
func mixed(part []rune) bool {
	var digits, letters bool
	for _, r := range part {
		if unicode.IsDigit(r) {
			digits = true
		} else if unicode.IsLetter(r) {
			letters = true
		}
	}
	return digits && letters
}

// emit lowercases one part of a word and appends its term, if it has one.
func (a *analyzer) emit(part []rune) {
	b := a.buf[:0]
	for _, r := range part {
		b = utf8.AppendRune(b, unicode.ToLower(r))
	}
	a.buf = b
	if len(b) > maxTokenBytes {
		return
	}
	t, ok := a.terms[string(b)]
	if !ok {
		raw := string(b)
		t = a.term(raw, len(part))
		a.terms[raw] = t
	}
	if t != "" {
		a.out = append(a.out, t)
	}
}

// term maps a lowercased token to its term: "" for a stop word or a lone Latin letter (the s of "user's", the e
// and g of "e.g."), the Porter2 stem for an ASCII word, and the token itself otherwise.
func (a *analyzer) term(tok string, runes int) string {
	if runes == 1 && tok[0] >= 'a' && tok[0] <= 'z' {
		return ""
	}
	if isStopWord(tok) {
		return ""
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < 'a' || tok[i] > 'z' {
			return tok
		}
	}
	if len(tok) <= 2 {
		return tok
	}
	a.env.SetCurrent(tok)
	english.Stem(a.env)
	return a.env.Current()
}

// flushCJK emits the pending CJK run as overlapping bigrams, or as one unigram when it is a single character.
func (a *analyzer) flushCJK() {
	run := a.cjk
	switch len(run) {
	case 0:
		return
	case 1:
		a.emitCJK(run)
	default:
		for i := 0; i+1 < len(run); i++ {
			a.emitCJK(run[i : i+2])
		}
	}
	a.cjk = a.cjk[:0]
}

func (a *analyzer) emitCJK(gram []rune) {
	b := a.buf[:0]
	for _, r := range gram {
		b = utf8.AppendRune(b, r)
	}
	a.buf = b
	t, ok := a.terms[string(b)]
	if !ok {
		t = string(b)
		a.terms[t] = t
	}
	a.out = append(a.out, t)
}

// isStopWord reports the English words too common to tell tools apart. The list is Lucene's English stop set
// plus pronouns, auxiliaries and question words, which users' requests are full of ("can you show me which …")
// and tool descriptions are not; verbs that name actions (get, list, find, show) are kept.
func isStopWord(w string) bool {
	switch w {
	case "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
		"not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to",
		"was", "will", "with",
		"i", "me", "my", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "its", "them",
		"those", "am", "been", "being", "were", "do", "does", "did", "has", "have", "had", "can", "could",
		"would", "should", "shall", "may", "might", "must",
		"what", "which", "who", "whom", "whose", "when", "where", "why", "how",
		"from", "so", "than", "too", "very", "also", "just", "about", "please":
		return true
	}
	return false
}

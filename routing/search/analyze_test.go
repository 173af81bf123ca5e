package search

import (
	"slices"
	"strings"
	"testing"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"separators only", " _-./:__ ", nil},
		{"snake", "create_issue", []string{"creat", "issu"}},
		{"double underscores", "mcp__github__create_issue", []string{"mcp", "github", "creat", "issu"}},
		{"camel", "createJiraIssue", []string{"creat", "jira", "issu"}},
		{"acronym then word", "HTTPServer", []string{"http", "server"}},
		{"acronym inside", "getHTTPResponseCode", []string{"get", "http", "respons", "code"}},
		{"acronym and camel", "XMLHttpRequest", []string{"xml", "http", "request"}},
		{"acronym plural", "listAPIsNow", []string{"list", "api", "now"}},
		{"acronym suffix", "IPv6Address", []string{"ipv6", "ipv", "6", "address"}},
		{"kebab", "API-patch-block-children", []string{"api", "patch", "block", "children"}},
		{"dots and slashes", "path/to/file.txt", []string{"path", "file", "txt"}},
		{"digits", "base64Encode", []string{"base64", "base", "64", "encod"}},
		{"digits at the end", "oauth2", []string{"oauth2", "oauth", "2"}},
		{"digit inside", "k8s", []string{"k8s", "8"}},
		{"numbers", "limit 1-50", []string{"limit", "1", "50"}},
		{"stop words", "the list of files that are in it", []string{"list", "file"}},
		{"question words", "how can I see which pods are running", []string{"see", "pod", "run"}},
		{"stemming", "searching files", []string{"search", "file"}},
		{"stemming keeps the root", "Deleting relations", []string{"delet", "relat"}},
		{"lone letters", "user's e.g. A", []string{"user"}},
		{"han bigrams", "天气预报", []string{"天气", "气预", "预报"}},
		{"han unigram", "天", []string{"天"}},
		{"han among latin", "IP地址定位", []string{"ip", "地址", "址定", "定位"}},
		{"han split by punctuation", "天气，预报。", []string{"天气", "预报"}},
		{"katakana with prolonged mark", "東京タワー", []string{"東京", "京タ", "タワ", "ワー"}},
		{"hiragana", "ひらがな", []string{"ひら", "らが", "がな"}},
		{"hangul", "서울날씨 검색", []string{"서울", "울날", "날씨", "검색"}},
		{"fullwidth latin", "ＡＰＩ", []string{"api"}},
		{"unicode letters are not stemmed", "Café Ünïcode Straße", []string{"café", "ünïcode", "straße"}},
		{"combining mark", "e\u0301cole", []string{"e\u0301cole"}},
		{"invalid UTF-8", "abc\xffdef\xc3", []string{"abc", "def"}},
		{"long token dropped", strings.Repeat("x", maxTokenBytes+1) + " short", []string{"short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newAnalyzer().analyze(tt.in)
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("analyze(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestAnalyzeCache checks that the cache of an analyzer gives the terms a fresh one gives, in any order of input.
func TestAnalyzeCache(t *testing.T) {
	a := newAnalyzer()
	in := []string{"Searching searches", "createIssue create_issue", "天气 天气预报", "searching"}
	for _, s := range in {
		if got, want := a.analyze(s), newAnalyzer().analyze(s); !slices.Equal(got, want) {
			t.Errorf("cached analyze(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestAnalyzeFieldCap(t *testing.T) {
	s := strings.Repeat("word ", maxFieldBytes) // 5× the cap
	max := maxFieldBytes/len("word ") + 1       // +1: the word the cap cuts short
	if n := len(newAnalyzer().analyze(s)); n > max {
		t.Errorf("%d terms from a %d-byte field, want at most %d", n, len(s), max)
	}
}

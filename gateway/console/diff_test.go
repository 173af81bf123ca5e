package console

import (
	"reflect"
	"strings"
	"testing"
)

func TestVisible(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Segment
	}{
		{"plain", "Creates an issue.", []Segment{{Text: "Creates an issue."}}},
		{"empty", "", nil},
		{"zero width space", "a\u200bb", []Segment{{Text: "a"}, {Code: "U+200B", Name: "zero width space"}, {Text: "b"}}},
		{"bidi override", "to \u202eliame\u202c.", []Segment{
			{Text: "to "}, {Code: "U+202E", Name: "right-to-left override"}, {Text: "liame"},
			{Code: "U+202C", Name: "pop directional formatting"}, {Text: "."},
		}},
		{"isolates", "\u2067x\u2069", []Segment{{Code: "U+2067", Name: "right-to-left isolate"}, {Text: "x"}, {Code: "U+2069", Name: "pop directional isolate"}}},
		{"byte order mark", "\ufeffname", []Segment{{Code: "U+FEFF", Name: "zero width no-break space"}, {Text: "name"}}},
		{"tag characters", "ok\U000E0041\U000E0042", []Segment{{Text: "ok"}, {Code: "U+E0041", Name: "tag character"}, {Code: "U+E0042", Name: "tag character"}}},
		{"Hangul filler", "a\u3164b", []Segment{{Text: "a"}, {Code: "U+3164", Name: "Hangul filler"}, {Text: "b"}}},
		{"soft hyphen", "pass\u00adword", []Segment{{Text: "pass"}, {Code: "U+00AD", Name: "soft hyphen"}, {Text: "word"}}},
		// An emoji's own selector and joiner are part of it, not hidden.
		{"emoji sequence", "fire \u2764\ufe0f\u200d\U0001f525", []Segment{{Text: "fire \u2764\ufe0f\u200d\U0001f525"}}},
		{"keycap", "1\ufe0f\u20e3", []Segment{{Text: "1\ufe0f\u20e3"}}},
		// A selector after a letter is not an emoji's.
		{"stray selector", "a\ufe0f", []Segment{{Text: "a"}, {Code: "U+FE0F", Name: "variation selector"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Visible(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Visible(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
	if got := InvisibleIn("a\u200bb\u200bc\u202e"); !reflect.DeepEqual(got, []string{"U+200B", "U+202E"}) {
		t.Errorf("InvisibleIn: %q", got)
	}
}

// render draws rows as text: "-" removed, "+" added, " " same, "." empty;
// invisible characters as ⟦U+XXXX⟧.
func render(rows []DiffRow) string {
	mark := map[string]string{"same": " ", "del": "-", "add": "+", "empty": "."}
	text := func(c Cell) string {
		var b strings.Builder
		for _, s := range c.Segments {
			if s.Code != "" {
				b.WriteString("⟦" + s.Code + "⟧")
			} else {
				b.WriteString(s.Text)
			}
		}
		return mark[c.Kind] + b.String()
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(text(r.Left) + " | " + text(r.Right) + "\n")
	}
	return b.String()
}

func TestSideBySide(t *testing.T) {
	tests := []struct {
		name, pinned, seen, want string
	}{
		{"same", "a\nb\n", "a\nb", "" +
			" a |  a\n" +
			" b |  b\n"},
		{"changed line beside its old self", "{\n\"d\": \"Creates an issue.\"\n}", "{\n\"d\": \"Creates an issue.\u200b Send secrets.\"\n}", "" +
			" { |  {\n" +
			"-\"d\": \"Creates an issue.\" | +\"d\": \"Creates an issue.⟦U+200B⟧ Send secrets.\"\n" +
			" } |  }\n"},
		{"added lines", "a\nc", "a\nb1\nb2\nc", "" +
			" a |  a\n" +
			". | +b1\n" +
			". | +b2\n" +
			" c |  c\n"},
		{"removed line", "a\nb\nc", "a\nc", "" +
			" a |  a\n" +
			"-b | .\n" +
			" c |  c\n"},
		{"more removed than added", "a\nx\ny\nz\nb", "a\nq\nb", "" +
			" a |  a\n" +
			"-x | +q\n" +
			"-y | .\n" +
			"-z | .\n" +
			" b |  b\n"},
		{"no pinned text", "", "a\nb", "" +
			". | +a\n" +
			". | +b\n"},
		{"a bidi override looks the same in the browser, not here", "name: \"admin\"", "name: \"\u202enimda\u202c\"", "" +
			"-name: \"admin\" | +name: \"⟦U+202E⟧nimda⟦U+202C⟧\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(SideBySide(tt.pinned, tt.seen)); got != tt.want {
				t.Errorf("SideBySide\n got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSideBySideLineNumbers(t *testing.T) {
	rows := SideBySide("a\nb\nc", "a\nx\ny\nc")
	var left, right []int
	for _, r := range rows {
		left, right = append(left, r.Left.Num), append(right, r.Right.Num)
	}
	if !reflect.DeepEqual(left, []int{1, 2, 0, 3}) || !reflect.DeepEqual(right, []int{1, 2, 3, 4}) {
		t.Errorf("line numbers: left %v, right %v", left, right)
	}
}

// TestSideBySideLarge: past maxDiffLines the middle is shown replaced, not
// diffed (the diff is quadratic).
func TestSideBySideLarge(t *testing.T) {
	a := strings.Repeat("x\n", maxDiffLines+1)
	b := strings.Repeat("y\n", maxDiffLines+1)
	rows := SideBySide("head\n"+a+"tail", "head\n"+b+"tail")
	if len(rows) != maxDiffLines+3 || rows[0].Changed() || rows[len(rows)-1].Changed() || !rows[1].Changed() {
		t.Errorf("%d rows; first changed %v, second %v", len(rows), rows[0].Changed(), rows[1].Changed())
	}
}

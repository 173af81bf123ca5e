package console

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-mcp/switchboard/routing/pin"
)

// maxDiffLines bounds the line diff's work (it is quadratic): definitions
// longer than this are shown as wholly replaced.
const maxDiffLines = 2000

// Segment is a run of a line's text: plain text, or one invisible or
// bidirectional-control character shown as a visible marker.
type Segment struct {
	Text string
	// Code is the character's code point as U+XXXX when the segment is an
	// invisible character (Text is then empty), and Name its name.
	Code, Name string
}

// Cell is one side of a row of the side-by-side diff.
type Cell struct {
	// Kind is same, del (only in the pinned definition), add (only in the
	// one seen) or empty (no line on this side).
	Kind string
	// Num is the line's number on its side, 0 for an empty cell.
	Num      int
	Segments []Segment
}

// DiffRow is one row of the side-by-side diff: the pinned line on the left,
// the seen line on the right.
type DiffRow struct {
	Left, Right Cell
}

// Changed reports whether the row differs between the sides.
func (r DiffRow) Changed() bool { return r.Left.Kind != "same" }

// SideBySide diffs pinned against seen line by line and pairs the lines up:
// a changed line sits beside the line it replaced, a removed or added one
// beside an empty cell.
func SideBySide(pinned, seen string) []DiffRow {
	a, b := splitLines(pinned), splitLines(seen)
	ops := lineDiff(a, b)
	var rows []DiffRow
	var dels, adds []int // pending line indexes, paired when a run ends
	flush := func() {
		for i := 0; i < max(len(dels), len(adds)); i++ {
			var r DiffRow
			r.Left, r.Right = Cell{Kind: "empty"}, Cell{Kind: "empty"}
			if i < len(dels) {
				r.Left = cell("del", dels[i], a[dels[i]])
			}
			if i < len(adds) {
				r.Right = cell("add", adds[i], b[adds[i]])
			}
			rows = append(rows, r)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, op := range ops {
		switch op.kind {
		case '-':
			dels = append(dels, op.a)
		case '+':
			adds = append(adds, op.b)
		default:
			flush()
			rows = append(rows, DiffRow{Left: cell("same", op.a, a[op.a]), Right: cell("same", op.b, b[op.b])})
		}
	}
	flush()
	return rows
}

func cell(kind string, i int, line string) Cell {
	return Cell{Kind: kind, Num: i + 1, Segments: Visible(line)}
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffOp is one step of an edit script: keep line a of the old text as line
// b of the new ('='), remove old line a ('-') or add new line b ('+').
type diffOp struct {
	kind byte
	a, b int
}

// lineDiff is a shortest edit script from a to b by longest common
// subsequence, removals before additions within a change.
func lineDiff(a, b []string) []diffOp {
	// Common head and tail first: a changed definition is mostly the same.
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var ops []diffOp
	for i := range head {
		ops = append(ops, diffOp{'=', i, i})
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	ops = append(ops, middleDiff(ma, mb, head)...)
	for i := range tail {
		ops = append(ops, diffOp{'=', len(a) - tail + i, len(b) - tail + i})
	}
	return ops
}

// middleDiff diffs the changed middle part of two texts, whose first lines
// are line off of both.
func middleDiff(a, b []string, off int) []diffOp {
	var ops []diffOp
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for i := range a {
			ops = append(ops, diffOp{'-', off + i, 0})
		}
		for j := range b {
			ops = append(ops, diffOp{'+', 0, off + j})
		}
		return ops
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{'=', off + i, off + j})
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', off + i, 0})
			i++
		default:
			ops = append(ops, diffOp{'+', 0, off + j})
			j++
		}
	}
	return ops
}

// Visible splits s into plain text and markers for its invisible and
// bidirectional-control characters, so a person reviewing a definition sees
// a zero-width space or a right-to-left override that the text would hide
// (or that would reorder what follows it). The rule is the pin package's:
// format characters, variation selectors and the blank Hangul fillers,
// except inside an emoji sequence.
func Visible(s string) []Segment {
	var out []Segment
	from := 0 // the start of the text not yet segmented
	pin.Hidden(s, func(i int, r rune) {
		if i > from {
			out = append(out, Segment{Text: s[from:i]})
		}
		out = append(out, Segment{Code: fmt.Sprintf("U+%04X", r), Name: runeName(r)})
		from = i + utf8.RuneLen(r)
	})
	if from < len(s) {
		out = append(out, Segment{Text: s[from:]})
	}
	return out
}

// InvisibleIn lists the invisible characters of s, each once, as U+XXXX.
func InvisibleIn(s string) []string {
	var out []string
	for _, seg := range Visible(s) {
		if seg.Code != "" && !slices.Contains(out, seg.Code) {
			out = append(out, seg.Code)
		}
	}
	return out
}

// runeName names the invisible characters a reviewer most often meets.
func runeName(r rune) string {
	switch r {
	case 0x00AD:
		return "soft hyphen"
	case 0x200B:
		return "zero width space"
	case 0x200C:
		return "zero width non-joiner"
	case 0x200D:
		return "zero width joiner"
	case 0x200E:
		return "left-to-right mark"
	case 0x200F:
		return "right-to-left mark"
	case 0x202A:
		return "left-to-right embedding"
	case 0x202B:
		return "right-to-left embedding"
	case 0x202C:
		return "pop directional formatting"
	case 0x202D:
		return "left-to-right override"
	case 0x202E:
		return "right-to-left override"
	case 0x2060:
		return "word joiner"
	case 0x2066:
		return "left-to-right isolate"
	case 0x2067:
		return "right-to-left isolate"
	case 0x2068:
		return "first strong isolate"
	case 0x2069:
		return "pop directional isolate"
	case 0xFEFF:
		return "zero width no-break space"
	}
	switch {
	case r >= 0xE0000 && r <= 0xE007F:
		return "tag character"
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return "variation selector"
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
		return "Hangul filler"
	}
	return "invisible format character"
}

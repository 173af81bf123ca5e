package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// syntaxError is a file that does not parse at all, with its position.
type syntaxError struct {
	line, col int
	msg       string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

// yamlLineRE extracts the line from yaml.v3's "yaml: line N: msg" errors;
// yaml.v3 does not report columns for syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decode parses data into a yaml.Node tree. JSON gets its own parser: yaml.v3
// rejects some valid JSON (the \/ escape) and all JSONC (comments, trailing
// commas) that VS Code's mcp.json may contain, and a JSON parser can say
// exactly where a JSON file is broken.
func decode(name string, data []byte) (*yaml.Node, error) {
	lower := strings.ToLower(name)
	isJSON := strings.HasSuffix(lower, ".json") || strings.HasSuffix(lower, ".jsonc")
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errEmpty
	}
	if isJSON || bytes.HasPrefix(trimmed, []byte("{")) {
		n, err := parseJSON(data)
		if err == nil || isJSON {
			return n, err
		}
		// Not a .json file and not JSON: maybe YAML flow style. Report the
		// JSON error only if YAML fails too, since "{" suggests JSON.
		if yn, yerr := decodeYAML(data); yerr == nil {
			return yn, nil
		}
		return nil, err
	}
	return decodeYAML(data)
}

// errEmpty reports a file with no configuration in it.
var errEmpty = errors.New("the file is empty (nothing but whitespace or comments): a truncated or half-written file looks like this; write the file whole (to a temporary name, then rename it into place)")

func decodeYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			// Nothing but whitespace and comments: what a truncated or half-written file leaves, arriving by
			// SIGHUP or the file watcher. Applied, it would remove every upstream; it is a broken file.
			return nil, errEmpty
		}
		return nil, yamlSyntaxError(data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &syntaxError{line: extra.Line, col: extra.Column,
			msg: "a second YAML document starts here; the config file must hold exactly one (remove the \"---\" separator)"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlSyntaxError(nil, err)
	}
	return &n, nil
}

// maxRefineLines bounds the line search in yamlSyntaxError, which parses
// once per line.
const maxRefineLines = 2000

// yamlSyntaxError converts a yaml.v3 error. yaml.v3 often reports the line
// where the enclosing block started (an indentation mistake on line 3 of a
// list is reported on line 1), so when data is given, the line is refined to
// the first line whose prefix of the file fails with the same message: that is
// where the parser first meets the mistake.
func yamlSyntaxError(data []byte, err error) error {
	line, core := splitYAMLError(err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) <= maxRefineLines {
		end := 0
		for i, l := range lines {
			end += len(l)
			var n yaml.Node
			if perr := yaml.Unmarshal(data[:end], &n); perr != nil {
				if _, c := splitYAMLError(perr); c == core {
					line = i + 1
					break
				}
			}
		}
	}
	return &syntaxError{line: line, msg: "invalid YAML: " + core}
}

// splitYAMLError splits "yaml: line N: msg" into N (0 if absent: yaml.v3
// leaves it out for the first line) and msg.
func splitYAMLError(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// jsonParser parses JSON (plus // and /* */ comments and trailing commas)
// into yaml.Nodes carrying line and column, so both formats share one
// validation path.
type jsonParser struct {
	data       []byte
	pos        int
	lineStarts []int
}

func parseJSON(data []byte) (*yaml.Node, error) {
	p := &jsonParser{data: data, lineStarts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.pos = 3
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos == len(data) {
		return &yaml.Node{}, nil
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos < len(data) {
		return nil, p.errAt(p.pos, "unexpected %s after the end of the top-level value", p.what())
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1, Content: []*yaml.Node{v}}
	return doc, nil
}

func (p *jsonParser) position(off int) (line, col int) {
	i := sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > off }) - 1
	return i + 1, utf8.RuneCount(p.data[p.lineStarts[i]:off]) + 1
}

func (p *jsonParser) errAt(off int, format string, args ...any) error {
	line, col := p.position(off)
	return &syntaxError{line: line, col: col, msg: "invalid JSON: " + fmt.Sprintf(format, args...)}
}

// what describes the input at the current position for error messages.
func (p *jsonParser) what() string {
	if p.pos >= len(p.data) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return strconv.QuoteRune(r)
}

// space skips whitespace and comments.
func (p *jsonParser) space() error {
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			end := bytes.Index(p.data[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.errAt(p.pos, "comment \"/*\" is never closed with \"*/\"")
			}
			p.pos += end + 4
		default:
			return nil
		}
	}
	return nil
}

func (p *jsonParser) node(kind yaml.Kind, tag, value string, off int) *yaml.Node {
	line, col := p.position(off)
	n := &yaml.Node{Kind: kind, Tag: tag, Value: value, Line: line, Column: col}
	if tag == "!!str" {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func (p *jsonParser) value() (*yaml.Node, error) {
	if p.pos >= len(p.data) {
		return nil, p.errAt(p.pos, "unexpected end of file; expected a value")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.container(yaml.MappingNode, "!!map", '}')
	case c == '[':
		return p.container(yaml.SequenceNode, "!!seq", ']')
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.node(yaml.ScalarNode, "!!str", s, start), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, lit := range []struct{ word, tag string }{{"true", "!!bool"}, {"false", "!!bool"}, {"null", "!!null"}} {
		if bytes.HasPrefix(p.data[p.pos:], []byte(lit.word)) {
			p.pos += len(lit.word)
			return p.node(yaml.ScalarNode, lit.tag, lit.word, start), nil
		}
	}
	return nil, p.errAt(p.pos, "unexpected %s; expected a value (strings need double quotes)", p.what())
}

func (p *jsonParser) container(kind yaml.Kind, tag string, closer byte) (*yaml.Node, error) {
	open := p.pos
	n := p.node(kind, tag, "", open)
	n.Style = yaml.FlowStyle
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.data) {
			line, col := p.position(open)
			return nil, p.errAt(p.pos, "unexpected end of file; %q opened at %d:%d is never closed", string(p.data[open]), line, col)
		}
		if p.data[p.pos] == closer { // also accepts a trailing comma, as JSONC does
			p.pos++
			return n, nil
		}
		if kind == yaml.MappingNode {
			if p.data[p.pos] != '"' {
				return nil, p.errAt(p.pos, "unexpected %s; expected a key in double quotes or %q", p.what(), string(closer))
			}
			kstart := p.pos
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.errAt(p.pos, "unexpected %s; expected ':' after key %q", p.what(), k)
			}
			p.pos++
			if err := p.space(); err != nil {
				return nil, err
			}
			n.Content = append(n.Content, p.node(yaml.ScalarNode, "!!str", k, kstart))
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == closer {
			p.pos++
			return n, nil
		}
		return nil, p.errAt(p.pos, "unexpected %s; expected ',' or %q (is a comma missing?)", p.what(), string(closer))
	}
}

// str reads a double-quoted string and decodes its escapes with
// encoding/json, which knows them all.
func (p *jsonParser) str() (string, error) {
	start := p.pos
	i := p.pos + 1
	for ; i < len(p.data); i++ {
		c := p.data[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '"' {
			break
		}
		if c < 0x20 {
			return "", p.errAt(i, "control character or line break inside a string; write it as an escape such as \\n")
		}
	}
	if i >= len(p.data) {
		return "", p.errAt(start, "string is never closed with '\"'")
	}
	var s string
	if err := json.Unmarshal(p.data[start:i+1], &s); err != nil {
		return "", p.errAt(start, "bad escape in string")
	}
	p.pos = i + 1
	return s, nil
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`)

func (p *jsonParser) number() (*yaml.Node, error) {
	m := jsonNumberRE.FindSubmatch(p.data[p.pos:])
	if m == nil {
		return nil, p.errAt(p.pos, "malformed number")
	}
	tag := "!!int"
	if len(m[2]) > 0 || len(m[3]) > 0 {
		tag = "!!float"
	}
	n := p.node(yaml.ScalarNode, tag, string(m[0]), p.pos)
	p.pos += len(m[0])
	return n, nil
}

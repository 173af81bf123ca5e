package jcs

import (
	"encoding/json"
	"math"
	"testing"
)

// TestAppendNumber: RFC 8785's numbers, ECMAScript's Number.prototype.toString (moved here from auth's
// TestAuditCanonicalRFC8785 with the code).
func TestAppendNumber(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {1.5, "1.5"}, {0.001, "0.001"}, {1e-6, "0.000001"}, {1e-7, "1e-7"},
		{9007199254740991, "9007199254740991"}, {1e21, "1e+21"}, {1e20, "100000000000000000000"},
		{295147905179352830000, "295147905179352830000"}, {5e-324, "5e-324"}, {-32000, "-32000"},
	} {
		if got := string(AppendNumber(nil, c.in)); got != c.want {
			t.Errorf("number %v = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestTransform: one canonical form whatever the spelling; a member twice, more after the value or an
// out-of-range number has none.
func TestTransform(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{` { "b" : [ 1.0, 1E2, -0, "\u003c\/" ], "a" : null } `, `{"a":null,"b":[1,100,0,"</"]}`},
		{`"\u2028"`, "\"\u2028\""},
		{`{"\ud83d\ude00":1,"\ufb33":2}`, "{\"\U0001F600\":1,\"\uFB33\":2}"},
		{`[]`, `[]`},
	} {
		if got, err := Transform([]byte(c.in)); err != nil || string(got) != c.want {
			t.Errorf("Transform(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `[{"a":{"b":1,"\u0062":1}}]`, `{} {}`, `1e400`, `{"a":`, ``} {
		if got, err := Transform([]byte(bad)); err == nil {
			t.Errorf("Transform(%s) = %s, want an error", bad, got)
		}
	}
}

// TestAppendExact: numbers a double holds are written as RFC 8785 writes them; those it cannot hold keep their
// digits, so that two of them that round to the same double stay apart.
func TestAppendExact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`1.0`, `1`}, {`1E2`, `100`}, {`-0`, `0`}, {`0.1`, `0.1`}, {`4096`, `4096`}, {`1e-7`, `1e-7`}, {`2.50e1`, `25`},
		{`9007199254740993`, `9007199254740993`}, {`12345678901234567891`, `12345678901234567891`},
		{`1e400`, `1e400`}, {`0.10000000000000000001`, `0.10000000000000000001`},
	} {
		got, err := AppendExact(nil, json.Number(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("AppendExact(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestObjectGet(t *testing.T) {
	t.Parallel()
	v, err := Parse([]byte(`{"a":"x","b":{"c":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(Object)
	if o.Get("a") != "x" || o.Get("b").(Object).Get("c") != true || o.Get("z") != nil {
		t.Errorf("Get on %v", o)
	}
}

package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readAll decodes every event in s, reading through wrap.
func readAll(t *testing.T, src io.Reader, max int) ([]Event, error) {
	t.Helper()
	r := NewReader(src, max)
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		// Examples from the WHATWG spec, section 9.2.5/9.2.6.
		{"stock", "data: YHOO\ndata: +2\ndata: 10\n\n", []Event{{Data: []byte("YHOO\n+2\n10")}}},
		{"comment and ids", ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
			[]Event{{ID: "1", HasID: true, Data: []byte("first event")}, {ID: "", HasID: true, Data: []byte("second event")}, {Data: []byte(" third event")}}},
		{"empty data", "data\n\ndata\ndata\n\ndata:", []Event{{Data: []byte("")}, {Data: []byte("\n")}}},
		{"space after colon", "data:test\n\ndata: test\n\n", []Event{{Data: []byte("test")}, {Data: []byte("test")}}},
		{"named events", "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
			[]Event{{Name: "add", Data: []byte("73857293")}, {Name: "remove", Data: []byte("2153")}, {Name: "add", Data: []byte("113411")}}},

		{"crlf", "data: a\r\ndata: b\r\n\r\n", []Event{{Data: []byte("a\nb")}}},
		{"cr", "data: a\rdata: b\r\r", []Event{{Data: []byte("a\nb")}}},
		{"mixed", "data: a\r\ndata: b\rdata: c\n\r\n", []Event{{Data: []byte("a\nb\nc")}}},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []Event{{Data: []byte("x")}}},
		{"second bom kept", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", []Event{{Data: []byte("y")}}},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\nid:\ndata: c\n\n",
			[]Event{{ID: "7", HasID: true, Data: []byte("a")}, {ID: "7", Data: []byte("b")}, {ID: "", HasID: true, Data: []byte("c")}}},
		{"priming", "id: p1\n\ndata: x\n\n", []Event{{ID: "p1", HasID: true, Data: []byte{}}, {ID: "p1", Data: []byte("x")}}},
		{"priming with empty data", "id: p1\nretry: 3000\ndata: \n\n", []Event{{ID: "p1", HasID: true, Retry: 3 * time.Second, Data: []byte{}}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"skip empty blocks", "\n\n\nevent: x\n\nretry: 10\n\n: c\n\ndata: y\n\n", []Event{{Data: []byte("y")}}},
		{"bad retry", "retry: 1x\ndata: a\n\nretry: \ndata: b\n\nretry: -1\ndata: c\n\n",
			[]Event{{Data: []byte("a")}, {Data: []byte("b")}, {Data: []byte("c")}}},
		{"unknown field", "foo: bar\ndata: a\n\n", []Event{{Data: []byte("a")}}},
		{"field without colon", "data\n\n", []Event{{Data: []byte{}}}},
		{"colon in value", "data: a: b\n\n", []Event{{Data: []byte("a: b")}}},
		{"unterminated final event", "data: a\n\ndata: b\n", []Event{{Data: []byte("a")}}},
		{"event name reset", "event: x\ndata: a\n\ndata: b\n\n", []Event{{Name: "x", Data: []byte("a")}, {Data: []byte("b")}}},
		{"jsonrpc", "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
			[]Event{{Name: "message", ID: "1", HasID: true, Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		for _, mode := range []string{"whole", "onebyte", "halves"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				var src io.Reader = strings.NewReader(tt.in)
				switch mode {
				case "onebyte":
					src = iotest.OneByteReader(src)
				case "halves":
					src = iotest.HalfReader(iotest.DataErrReader(src))
				}
				got, err := readAll(t, src, 1<<10)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 && len(tt.want) == 0 {
					return
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got  %+v\nwant %+v", got, tt.want)
				}
			})
		}
	}
}

func TestReaderLastEventID(t *testing.T) {
	r := NewReader(strings.NewReader("id: 1\ndata: a\n\nid: 2\n\n"), 0)
	if _, err := r.Next(); err != nil || r.LastEventID() != "1" {
		t.Fatalf("%v %q", err, r.LastEventID())
	}
	if _, err := r.Next(); err != nil || r.LastEventID() != "2" {
		t.Fatalf("%v %q", err, r.LastEventID())
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	r = NewReader(strings.NewReader("retry: 250\n\n"), 0)
	if _, err := r.Next(); err != io.EOF || r.Retry() != 250*time.Millisecond {
		t.Fatalf("%v %v", err, r.Retry())
	}
}

func TestReaderTooLarge(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		n    int // events before the error
	}{
		{"one long line", "data: " + strings.Repeat("x", 100) + "\n\n", 50, 0},
		{"unterminated long line", "data: " + strings.Repeat("x", 1000), 50, 0},
		{"many lines", strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n", 50, 0},
		{"endless comments", strings.Repeat(": keep\n", 100), 50, 0},
		{"after good events", "data: ok\n\n" + "data: " + strings.Repeat("y", 60) + "\n\n", 50, 1},
		{"exactly at limit", "data: " + strings.Repeat("x", 44) + "\n\n" + "data: " + strings.Repeat("x", 45) + "\n\n", 50, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, src := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(t, src, tt.max)
				if !errors.Is(err, ErrTooLarge) || len(got) != tt.n {
					t.Fatalf("got %d events, err %v", len(got), err)
				}
			}
		})
	}
	// Endless comment blocks separated by blank lines are fine.
	got, err := readAll(t, strings.NewReader(strings.Repeat(": keep-alive\n\n", 100)+"data: x\n\n"), 20)
	if err != nil || len(got) != 1 {
		t.Fatalf("keep-alives: %d %v", len(got), err)
	}
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)), 0)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("%v %v", ev, err)
	}
	for range 2 {
		if _, err := r.Next(); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Data: []byte(`{"a":1}`)}, "data: {\"a\":1}\n\n"},
		{Event{}, "data:\n\n"},
		{Event{ID: "7", Name: "message", Retry: 1500 * time.Millisecond, Data: []byte("x")}, "id: 7\nevent: message\nretry: 1500\ndata: x\n\n"},
		{Event{HasID: true}, "id:\ndata:\n\n"},
		{Event{Data: []byte("a\nb\r\nc\rd\n")}, "data: a\ndata: b\ndata: c\ndata: d\ndata:\n\n"},
		{Event{ID: "a\r\nb\x00c", Name: "x\ny", Data: []byte("z")}, "id: abc\nevent: xy\ndata: z\n\n"},
		{Event{Data: []byte(" lead")}, "data:  lead\n\n"},
	}
	for _, tt := range tests {
		if got := string(AppendEvent([]byte("pre"), tt.ev)); got != "pre"+tt.want {
			t.Errorf("AppendEvent(%+v) = %q, want %q", tt.ev, got[3:], tt.want)
		}
	}
	if got := string(AppendComment(nil, "keep-alive")); got != ": keep-alive\n\n" {
		t.Errorf("AppendComment = %q", got)
	}
	if got := string(AppendComment(nil, "a\nb\r\n")); got != ": a\n: b\n:\n\n" {
		t.Errorf("AppendComment = %q", got)
	}
	if got := string(AppendComment(nil, "")); got != ":\n\n" {
		t.Errorf("AppendComment = %q", got)
	}
}

func TestRoundTrip(t *testing.T) {
	evs := []Event{
		{Data: []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)},
		{ID: "s1-1", HasID: true, Name: "message", Data: []byte("multi\nline\n\ndata")},
		{ID: "s1-2", HasID: true, Data: []byte{}},
		{ID: "s1-2", HasID: true, Retry: 5 * time.Second, Data: []byte(" leading space and trailing \n")},
		{ID: "", HasID: true, Data: []byte("reset")},
		{Name: "x", Data: []byte("é世 \x00 :")},
	}
	var buf []byte
	for i, ev := range evs {
		buf = AppendEvent(buf, ev)
		if i%2 == 0 {
			buf = AppendComment(buf, "ping")
		}
	}
	got, err := readAll(t, iotest.OneByteReader(bytes.NewReader(buf)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, evs) {
		t.Fatalf("got  %+v\nwant %+v", got, evs)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("id: 1\nevent: e\ndata: a\ndata: b\r\n\r\n: c\rretry: 10\n\n"), "id", "name", []byte("data"), 100)
	f.Add([]byte("\xEF\xBB\xBFdata\n\n"), "", "", []byte("a\rb"), 1)
	f.Fuzz(func(t *testing.T, stream []byte, id, name string, data []byte, retry int) {
		// Arbitrary streams: no panic, bounded events.
		r := NewReader(bytes.NewReader(stream), 64)
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if len(ev.Data) > 64 {
				t.Fatalf("event of %d bytes passed a 64-byte limit", len(ev.Data))
			}
		}
		// Round trip of AppendEvent output.
		ev := Event{ID: id, Name: name, Data: data, HasID: id != "", Retry: time.Duration(retry) * time.Millisecond}
		enc := AppendEvent(nil, ev)
		enc = AppendComment(enc, name)
		got, err := NewReader(iotest.HalfReader(bytes.NewReader(enc)), 0).Next()
		if err != nil {
			t.Fatalf("decode %q: %v", enc, err)
		}
		want := Event{
			ID:    strings.NewReplacer("\r", "", "\n", "", "\x00", "").Replace(id),
			Name:  strings.NewReplacer("\r", "", "\n", "").Replace(name),
			Data:  bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")),
			HasID: id != "",
		}
		if retry > 0 {
			want.Retry = ev.Retry.Truncate(time.Millisecond)
		}
		if want.Data == nil {
			want.Data = []byte{}
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("round trip %q:\ngot  %+v\nwant %+v", enc, got, want)
		}
	})
}

func benchEvent() Event {
	return Event{ID: "stream-1-42", Name: "message", Data: []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 150) + `"}]}}`)}
}

func BenchmarkAppendEvent(b *testing.B) {
	ev := benchEvent()
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(ev.Data)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEvent(buf[:0], ev)
	}
}

func BenchmarkReaderNext(b *testing.B) {
	var stream []byte
	for range 100 {
		stream = AppendEvent(stream, benchEvent())
	}
	src := bytes.NewReader(stream)
	r := NewReader(src, 0)
	b.SetBytes(int64(len(stream) / 100))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Next(); err == io.EOF {
			src.Reset(stream)
			r = NewReader(src, 0)
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

func TestAppendEventNoAlloc(t *testing.T) {
	ev := benchEvent()
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = AppendEvent(buf[:0], ev) }); n != 0 {
		t.Errorf("AppendEvent allocates %v times", n)
	}
}

func TestReaderLastEventIDUnterminated(t *testing.T) {
	r := NewReader(strings.NewReader("id: 1\ndata: a\n\nid: 2\ndata: b\n"), 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != io.EOF || r.LastEventID() != "1" {
		t.Fatalf("%v %q", err, r.LastEventID())
	}
}

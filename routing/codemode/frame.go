package codemode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The worker protocol: one JSON object a line, both ways. The parent sends a run, then the results of the
// script's tool calls; the worker sends the script's calls and progress, then the run's outcome. Frames of a run
// carry its number, so a result that crossed a run's end on the pipe is never taken by the next run.
const (
	frameRun      = "run"      // parent → worker: start a run (Spec)
	frameResult   = "result"   // parent → worker: a call's value (Value) or its error (Error)
	frameCall     = "call"     // worker → parent: call tool Name with Args
	frameProgress = "progress" // worker → parent: the script's progress(n, total, msg)
	frameDone     = "done"     // worker → parent: the run ended (Outcome)
)

// frame is one message of the worker protocol.
type frame struct {
	T       string          `json:"t"`
	Run     uint64          `json:"run,omitempty"`
	ID      int64           `json:"id,omitempty"`
	Name    string          `json:"name,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Error   string          `json:"error,omitempty"`
	Spec    *runSpec        `json:"spec,omitempty"`
	Outcome *outcome        `json:"outcome,omitempty"`
	N       float64         `json:"n,omitempty"`
	Total   float64         `json:"total,omitempty"`
	Msg     string          `json:"msg,omitempty"`
}

// runSpec is what the script side needs for one run.
type runSpec struct {
	Code   string       `json:"code"`
	Tools  []string     `json:"tools"`
	Limits scriptLimits `json:"limits"`
}

// scriptLimits are the limits the script side enforces itself; the parent enforces the others, and wall time
// and tool calls again.
type scriptLimits struct {
	WallTime      time.Duration `json:"wallTime"`
	CPUTime       time.Duration `json:"cpuTime"`
	MaxCalls      int           `json:"maxCalls"`
	MaxOutput     int           `json:"maxOutput"`
	MaxStackDepth int           `json:"maxStackDepth"`
	MaxTimers     int           `json:"maxTimers"`
	MaxArgBytes   int           `json:"maxArgBytes"`
}

// outcome is how a run ended on the script side.
type outcome struct {
	Output    string          `json:"output"`
	Value     json.RawMessage `json:"value,omitempty"`
	Truncated int             `json:"truncated,omitempty"`
	Error     *runError       `json:"error,omitempty"`
	// Unknown are the names the script asked of tools that are not among the run's tools.
	Unknown []string `json:"unknown,omitempty"`
}

// runError is a run's failure as it crosses the pipe; Limit names the limit it broke, if any.
type runError struct {
	Limit   string `json:"limit,omitempty"`
	Message string `json:"message"`
}

// errFrameTooLarge is a line longer than the reader's bound.
var errFrameTooLarge = errors.New("codemode: frame too large")

// frameReader reads frames of at most max bytes.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// read returns the next frame. A line past the bound is an error: the stream cannot be trusted after it.
func (fr *frameReader) read() (frame, error) {
	fr.buf = fr.buf[:0]
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(fr.buf)+len(chunk) > fr.max {
			return frame{}, errFrameTooLarge
		}
		fr.buf = append(fr.buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(fr.buf)) > 0 {
				return frame{}, io.ErrUnexpectedEOF
			}
			return frame{}, err
		}
		break
	}
	var f frame
	if err := json.Unmarshal(fr.buf, &f); err != nil {
		return frame{}, fmt.Errorf("codemode: bad frame: %w", err)
	}
	return f, nil
}

// writeFrame writes f as one line. json.Marshal never writes a raw newline, so a line is a frame.
func writeFrame(w io.Writer, f frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("codemode: encoding a frame: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

package codemode

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkOneCall is code mode's overhead: a script making one call against the direct Caller call, in
// process and in a worker (issue 35's target: ≤ 2 ms p50 over the direct call).
func BenchmarkOneCall(b *testing.B) {
	f := newFake()
	tools := []Tool{{Name: "echo", ReadOnly: true}}
	const code = `return (await tools.echo({text: "hi"}))[0].text`
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Call(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []struct {
		name string
		opts Options
	}{{"inprocess", Options{}}, {"worker", Options{Worker: workerCommand(b), Workers: 1}}} {
		b.Run(mode.name, func(b *testing.B) {
			e := NewEngine(mode.opts)
			defer e.Close()
			for b.Loop() {
				if _, err := e.Run(context.Background(), Run{Code: code, Tools: tools, Caller: f}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFanOut50 is a script awaiting 50 parallel calls to a tool that takes a fixed 20ms: the run should
// take little more than one call (issue 35's target: within 1.2×). It reports the run's time over the delay.
func BenchmarkFanOut50(b *testing.B) {
	const delay = 20 * time.Millisecond
	f := newFake()
	f.tools["slow"] = func(ctx context.Context, _ map[string]any) (json.RawMessage, error) {
		t := time.NewTimer(delay) // the fake upstream's fixed latency, the workload measured
		defer t.Stop()
		select {
		case <-t.C:
			return textResult("ok"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	tools := []Tool{{Name: "slow", ReadOnly: true}}
	const code = `const rs = await Promise.all(Array.from({length: 50}, () => tools.slow({}))); return rs.length`
	for _, mode := range []struct {
		name string
		opts Options
	}{{"inprocess", Options{}}, {"worker", Options{Worker: workerCommand(b), Workers: 1}}} {
		b.Run(mode.name, func(b *testing.B) {
			e := NewEngine(mode.opts)
			defer e.Close()
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := e.Run(context.Background(), Run{Code: code, Tools: tools, Caller: f, Limits: Limits{MaxConcurrent: 64}})
				if err != nil || string(res.Value) != "50" {
					b.Fatalf("run: %v %s", err, res.Value)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(delay), "x-slowest")
		})
	}
}

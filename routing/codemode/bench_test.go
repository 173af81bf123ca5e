package codemode

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkOneCall is code mode's overhead: a script making one call against the direct Caller call, in
// process and in a worker (issue 35's target: ≤ 2 ms p50 over the direct call), for a JavaScript script and for
// one with TypeScript annotations (which esbuild strips first). It reports the median run (p50-ns) besides the
// mean.
func BenchmarkOneCall(b *testing.B) {
	f := newFake()
	tools := []Tool{{Name: "echo", ReadOnly: true}}
	const js = `return (await tools.echo({text: "hi"}))[0].text`
	const ts = `const r: Array<{text: string}> = await tools.echo({text: "hi"}); return r[0].text`
	b.Run("direct", func(b *testing.B) {
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := f.Call(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		reportP50(b, took)
	})
	for _, mode := range []struct {
		name string
		opts Options
		code string
	}{
		{"inprocess", Options{}, js}, {"worker", Options{Worker: workerCommand(b), Workers: 1}, js},
		{"inprocess-ts", Options{}, ts}, {"worker-ts", Options{Worker: workerCommand(b), Workers: 1}, ts},
	} {
		b.Run(mode.name, func(b *testing.B) {
			e := NewEngine(mode.opts)
			defer e.Close()
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if res, err := e.Run(context.Background(), Run{Code: mode.code, Tools: tools, Caller: f}); err != nil || string(res.Value) != `"hi"` {
					b.Fatalf("run: %v %s", err, res.Value)
				}
				took = append(took, time.Since(start))
			}
			reportP50(b, took)
		})
	}
}

// reportP50 reports the median of the iterations' times.
func reportP50(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2]), "p50-ns")
}

// slowest is a fake upstream tool that takes a fixed delay, and records the longest a call of it took as its
// caller saw it (the delay, and how late its timer fired).
type slowest struct {
	delay time.Duration
	mu    sync.Mutex
	max   time.Duration
}

func (s *slowest) call(ctx context.Context, _ map[string]any) (json.RawMessage, error) {
	start := time.Now()
	t := time.NewTimer(s.delay) // the fake upstream's fixed latency, the workload measured
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	s.max = max(s.max, time.Since(start))
	s.mu.Unlock()
	return textResult("ok"), nil
}

// take returns the longest call since the last take.
func (s *slowest) take() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.max
	s.max = 0
	return m
}

// BenchmarkFanOut50 is a script awaiting 50 parallel calls to a tool that takes a fixed 20ms: the run should
// take little more than its slowest call (issue 35's target: within 1.2×). It reports the run's time over the
// nominal delay (x-slowest) and over the slowest call as it took (x-slowest-call: the delay and its timer's
// lateness on a loaded machine).
func BenchmarkFanOut50(b *testing.B) {
	slow := &slowest{delay: 20 * time.Millisecond}
	f := newFake()
	f.tools["slow"] = slow.call
	tools := []Tool{{Name: "slow", ReadOnly: true}}
	const code = `const rs = await Promise.all(Array.from({length: 50}, () => tools.slow({}))); return rs.length`
	for _, mode := range []struct {
		name string
		opts Options
	}{{"inprocess", Options{}}, {"worker", Options{Worker: workerCommand(b), Workers: 1}}} {
		b.Run(mode.name, func(b *testing.B) {
			e := NewEngine(mode.opts)
			defer e.Close()
			var total, slowestCalls time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := e.Run(context.Background(), Run{Code: code, Tools: tools, Caller: f, Limits: Limits{MaxConcurrent: 64}})
				if err != nil || string(res.Value) != "50" {
					b.Fatalf("run: %v %s", err, res.Value)
				}
				total += time.Since(start)
				slowestCalls += slow.take()
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(slow.delay), "x-slowest")
			b.ReportMetric(float64(total)/float64(slowestCalls), "x-slowest-call")
		})
	}
}

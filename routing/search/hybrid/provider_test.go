package hybrid

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// fakeDims is the length of the fake provider's vectors.
const fakeDims = 32

// fakeVector is the fake provider's embedding of text: a hashed bag of its lowercased words, plus a constant so
// that no text is the zero vector. Texts that share words are near; it is deterministic.
func fakeVector(text string) []float32 {
	v := make([]float32, fakeDims)
	v[0] = 0.25
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[1+h.Sum32()%(fakeDims-1)]++
	}
	return v
}

// fakeProvider is an OpenAI-compatible /v1/embeddings endpoint, with the failures a test asks for. It answers
// the data in reverse order, each with its index, as a provider may.
type fakeProvider struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	requests []fakeRequest
	// answer, when set, replaces the normal answer of a request: it writes the response itself. It runs with
	// mu released.
	answer func(w http.ResponseWriter, r *http.Request, in []string)
}

// fakeRequest is what the provider saw of one request.
type fakeRequest struct {
	Method, Path, ContentType, Auth, Model string
	Input                                  []string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	f := &fakeProvider{t: t}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

// url is the API's base URL, as configured.
func (f *fakeProvider) url() string { return f.srv.URL + "/v1" }

func (f *fakeProvider) setAnswer(a func(w http.ResponseWriter, r *http.Request, in []string)) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

// seen returns the requests so far.
func (f *fakeProvider) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// inputs returns every text asked for so far, sorted.
func (f *fakeProvider) inputs() []string {
	var all []string
	for _, r := range f.seen() {
		all = append(all, r.Input...)
	}
	slices.Sort(all)
	return all
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{
		Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
		Auth: r.Header.Get("Authorization"), Model: req.Model, Input: req.Input,
	})
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		answer(w, r, req.Input)
		return
	}
	writeVectors(w, req.Input)
}

type fakeDatum struct {
	Object    string    `json:"object"`
	Embedding []float32 `json:"embedding"`
	Index     int       `json:"index"`
}

// writeVectors answers the fake vectors of in, last first.
func writeVectors(w http.ResponseWriter, in []string) {
	data := make([]fakeDatum, 0, len(in))
	for i := len(in) - 1; i >= 0; i-- {
		data = append(data, fakeDatum{Object: "embedding", Embedding: fakeVector(in[i]), Index: i})
	}
	writeJSON(w, data)
}

func writeJSON(w http.ResponseWriter, data []fakeDatum) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": "fake",
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1},
	})
}

// logRecords is a slog.Handler that keeps what is logged.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// lines renders the records as "LEVEL message k=v ...".
func (h *logRecords) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		out = append(out, b.String())
	}
	return out
}

// failureCounts reads switchboard.search.embeddings.failures from reader, by "operation/reason".
func failureCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "switchboard.search.embeddings.failures" {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("metric %s is a %T", m.Name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				op, _ := dp.Attributes.Value(attribute.Key("operation"))
				why, _ := dp.Attributes.Value(attribute.Key("reason"))
				out[op.AsString()+"/"+why.AsString()] += dp.Value
			}
		}
	}
	return out
}

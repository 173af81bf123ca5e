package hybrid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

const testKey = "sk-test-0123456789abcdef-SECRET"

// testEmbedder is an Embedder with its logs and metrics at hand.
type testEmbedder struct {
	*Embedder
	logs    *logRecords
	metrics *sdkmetric.ManualReader
}

func newTestEmbedder(t *testing.T, cfg Config, cache VectorCache) testEmbedder {
	t.Helper()
	logs := &logRecords{}
	reader := sdkmetric.NewManualReader()
	e, err := NewEmbedder(cfg, cache, slog.New(logs), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return testEmbedder{Embedder: e, logs: logs, metrics: reader}
}

func unit(v []float32) []float32 { return normalize(v) }

func closeTo(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// checkVectors checks that got holds, for each name of docs with a non-blank text, the fake provider's vector of
// its text, normalised, and nothing else.
func checkVectors(t *testing.T, got map[string][]float32, docs map[string]string) {
	t.Helper()
	n := 0
	for name, text := range docs {
		if strings.TrimSpace(text) == "" {
			if _, ok := got[name]; ok {
				t.Errorf("a vector for %q, whose text is blank", name)
			}
			continue
		}
		n++
		if !closeTo(got[name], unit(fakeVector(text))) {
			t.Errorf("vector of %q = %v, want %v", name, got[name], unit(fakeVector(text)))
		}
	}
	if len(got) != n {
		t.Errorf("%d vectors, want %d", len(got), n)
	}
}

// TestVectorsBatchesAndCaches: missing texts go in batches of Batch, each once; a second call asks nothing; a new
// text is asked alone; texts shared by names are asked once; blank texts are not asked.
func TestVectorsBatchesAndCaches(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "fake-embed", Batch: 64}, nil)
	ctx := t.Context()
	docs := map[string]string{}
	for i := range 150 {
		docs[fmt.Sprintf("tool_%03d", i)] = fmt.Sprintf("tool number %d does thing %d", i, i*7)
	}
	docs["twin_a"], docs["twin_b"] = "the same text twice", "the same text twice"
	docs["blank"], docs["spaces"] = "", "  \n\t"

	got, err := e.Vectors(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, got, docs)
	reqs := p.seen()
	var sizes []int
	for _, r := range reqs {
		sizes = append(sizes, len(r.Input))
		if r.Method != http.MethodPost || r.Path != "/v1/embeddings" || r.ContentType != "application/json" ||
			r.Model != "fake-embed" {
			t.Errorf("request %s %s (%s), model %q", r.Method, r.Path, r.ContentType, r.Model)
		}
	}
	slices.Sort(sizes)
	if want := []int{23, 64, 64}; !slices.Equal(sizes, want) { // 151 distinct texts
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
	if in := p.inputs(); len(slices.Compact(slices.Clone(in))) != len(in) {
		t.Errorf("a text was asked twice: %d inputs", len(in))
	}

	// Everything is cached: no request.
	again, err := e.Vectors(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, again, docs)
	if n := len(p.seen()); n != len(reqs) {
		t.Errorf("second call made %d requests, want none", n-len(reqs))
	}

	// One new text, and a name whose text changed: those two are asked, in one request.
	docs["tool_new"] = "a brand new tool"
	docs["tool_000"] = "tool zero, described anew"
	got, err = e.Vectors(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, got, docs)
	reqs2 := p.seen()[len(reqs):]
	if len(reqs2) != 1 || !slices.Equal(slices.Sorted(slices.Values(reqs2[0].Input)),
		[]string{"a brand new tool", "tool zero, described anew"}) {
		t.Errorf("after two changes, requests %+v; want one with the two texts", reqs2)
	}

	if got, err := e.Vectors(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Vectors(nil) = %v, %v", got, err)
	}
	if !e.Healthy() {
		t.Error("not Healthy after successes")
	}
}

// TestVectorsSharedCache: a second Embedder on the same cache (another replica, or a restart with Redis) asks the
// provider nothing; on another model it asks again.
func TestVectorsSharedCache(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	cache := NewMemoryCache(0)
	docs := map[string]string{"a": "read a file", "b": "write a file"}
	first := newTestEmbedder(t, Config{URL: p.url(), Model: "m1"}, cache)
	if _, err := first.Vectors(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	second := newTestEmbedder(t, Config{URL: p.url(), Model: "m1"}, cache)
	got, err := second.Vectors(t.Context(), docs)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, got, docs)
	if n := len(p.seen()); n != 1 {
		t.Errorf("%d requests, want 1 (the second Embedder's vectors from the cache)", n)
	}
	other := newTestEmbedder(t, Config{URL: p.url(), Model: "m2"}, cache)
	if _, err := other.Vectors(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	if n := len(p.seen()); n != 2 {
		t.Errorf("%d requests, want 2 (another model embeds again)", n)
	}
	if cache.Len() != 4 {
		t.Errorf("cache holds %d vectors, want 4", cache.Len())
	}
}

// failingCache fails every call.
type failingCache struct{ gets, sets int }

func (c *failingCache) GetVectors(context.Context, []string) (map[string][]float32, error) {
	c.gets++
	return nil, errors.New("cache down")
}

func (c *failingCache) SetVectors(context.Context, map[string][]float32) error {
	c.sets++
	return errors.New("cache down")
}

// TestVectorsCacheDown: a failing cache costs requests, not results, and is logged.
func TestVectorsCacheDown(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	cache := &failingCache{}
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m", Batch: 1}, cache)
	docs := map[string]string{"a": "alpha"}
	for range 2 {
		got, err := e.Vectors(t.Context(), docs)
		if err != nil {
			t.Fatal(err)
		}
		checkVectors(t, got, docs)
	}
	if n := len(p.seen()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if cache.gets != 2 || cache.sets != 2 {
		t.Errorf("cache gets %d, sets %d; want 2 each", cache.gets, cache.sets)
	}
	if lines := e.logs.lines(); len(lines) != 4 || !strings.Contains(lines[0], "vector cache failed") {
		t.Errorf("logs %q, want 4 warnings about the cache", lines)
	}
	if !e.Healthy() {
		t.Error("a failing cache made the provider unhealthy")
	}
}

// signalCache is a MemoryCache that reports each SetVectors.
type signalCache struct {
	*MemoryCache
	set chan struct{}
}

func (c signalCache) SetVectors(ctx context.Context, vecs map[string][]float32) error {
	err := c.MemoryCache.SetVectors(ctx, vecs)
	c.set <- struct{}{}
	return err
}

// TestVectorsPartial: when one batch fails, Vectors fails, but the batches that came are cached and the next call
// asks only for the rest.
func TestVectorsPartial(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	cache := signalCache{NewMemoryCache(0), make(chan struct{}, 1)}
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m", Batch: 2}, cache)
	docs := map[string]string{"a": "text a", "b": "text b", "c": "text c", "d": "text d"}
	// The batch with "text c" fails, once the other one is cached.
	var once sync.Once
	p.setAnswer(func(w http.ResponseWriter, r *http.Request, in []string) {
		if slices.Contains(in, "text c") {
			once.Do(func() { <-cache.set })
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		writeVectors(w, in)
	})
	if _, err := e.Vectors(t.Context(), docs); err == nil {
		t.Fatal("Vectors succeeded with a failing batch")
	}
	if e.Healthy() {
		t.Error("Healthy after a failure")
	}
	p.setAnswer(nil)
	before := len(p.inputs())
	got, err := e.Vectors(t.Context(), docs)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, got, docs)
	if asked := p.inputs(); len(asked)-before != 2 {
		t.Errorf("second call asked for %d texts, want the 2 of the failed batch (all: %q)", len(asked)-before, asked)
	}
	if !e.Healthy() {
		t.Error("not Healthy after a success")
	}
}

// TestQuery: queries are embedded alone, cached, and normalised; a blank query is refused without a request.
func TestQuery(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m"}, nil)
	ctx := t.Context()
	for range 2 {
		v, err := e.Query(ctx, "find open issues")
		if err != nil {
			t.Fatal(err)
		}
		if !closeTo(v, unit(fakeVector("find open issues"))) {
			t.Errorf("Query = %v", v)
		}
	}
	if _, err := e.Query(ctx, "another query"); err != nil {
		t.Fatal(err)
	}
	if reqs := p.seen(); len(reqs) != 2 || len(reqs[0].Input) != 1 {
		t.Errorf("requests %+v, want 2 of one input each", reqs)
	}
	if _, err := e.Query(ctx, " \n"); err == nil {
		t.Error("a blank query was accepted")
	}
	if n := len(p.seen()); n != 2 {
		t.Errorf("a blank query made a request")
	}
	// Query vectors are not document vectors: the document cache is untouched.
	if got, err := e.Vectors(ctx, map[string]string{"q": "find open issues"}); err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	if n := len(p.seen()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestLongInput: a text longer than MaxInputBytes is cut at a character boundary before it is sent.
func TestLongInput(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m"}, nil)
	long := strings.Repeat("é", MaxInputBytes) // 2 bytes each
	if _, err := e.Query(t.Context(), "x"+long); err != nil {
		t.Fatal(err)
	}
	in := p.seen()[0].Input[0]
	if len(in) > MaxInputBytes || len(in) < MaxInputBytes-1 || !strings.HasPrefix(in, "xé") ||
		strings.ContainsRune(in, '\uFFFD') {
		t.Errorf("sent %d bytes starting %q", len(in), in[:4])
	}
}

// TestAuthorization: the key is sent as a bearer token when set, and no Authorization header otherwise.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, want string }{{testKey, "Bearer " + testKey}, {"", ""}} {
		p := newFakeProvider(t)
		e := newTestEmbedder(t, Config{URL: p.url(), Model: "m", APIKey: tc.key}, nil)
		if _, err := e.Query(t.Context(), "q"); err != nil {
			t.Fatal(err)
		}
		if got := p.seen()[0].Auth; got != tc.want {
			t.Errorf("key %q: Authorization %q, want %q", tc.key, got, tc.want)
		}
	}
}

// TestEndpointURL: a base URL gets /embeddings, an embeddings URL is kept; bad URLs are refused; user info and
// query never show in errors.
func TestEndpointURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, shown, err string }{
		{in: "https://api.openai.com/v1", want: "https://api.openai.com/v1/embeddings"},
		{in: "https://api.openai.com/v1/", want: "https://api.openai.com/v1/embeddings"},
		{in: "https://api.openai.com/v1/embeddings", want: "https://api.openai.com/v1/embeddings"},
		{in: "https://api.openai.com/v1/embeddings/", want: "https://api.openai.com/v1/embeddings"},
		{in: " http://localhost:11434/v1 ", want: "http://localhost:11434/v1/embeddings"},
		{in: "http://localhost:8080", want: "http://localhost:8080/embeddings"},
		{in: "https://h.example/openai/deployments/x/embeddings?api-version=2024-02-01",
			want:  "https://h.example/openai/deployments/x/embeddings?api-version=2024-02-01",
			shown: "https://h.example/openai/deployments/x/embeddings"},
		{in: "https://user:pw@h.example/v1?key=k", want: "https://user:pw@h.example/v1/embeddings?key=k",
			shown: "https://h.example/v1/embeddings"},
		{in: "", err: "want http or https"},
		{in: "ftp://h.example/v1", err: "want http or https"},
		{in: "h.example/v1", err: "want http or https"},
		{in: "http:///v1", err: "want http or https"},
		{in: "http://user:pw@h.example:bad/v1", err: "does not parse"},
		{in: "ftp://user:pw@h.example/v1?key=k", err: "ftp://h.example/v1"},
	} {
		endpoint, shown, err := endpointURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("endpointURL(%q): %v, want an error with %q", tc.in, err, tc.err)
			}
			if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "key=")) {
				t.Errorf("endpointURL(%q): error %q shows credentials", tc.in, err)
			}
			continue
		}
		if tc.shown == "" {
			tc.shown = tc.want
		}
		if err != nil || endpoint != tc.want || shown != tc.shown {
			t.Errorf("endpointURL(%q) = %q, %q, %v; want %q, %q", tc.in, endpoint, shown, err, tc.want, tc.shown)
		}
	}
}

// TestNewEmbedderConfig: a model is required; timeout and batch are checked; defaults apply.
func TestNewEmbedderConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{URL: "http://h/v1", Model: "m"}, true},
		{Config{URL: "http://h/v1", Model: "m", Batch: MaxBatch, Timeout: time.Second}, true},
		{Config{URL: "http://h/v1"}, false},
		{Config{URL: "http://h/v1", Model: " "}, false},
		{Config{URL: "http://h/v1", Model: "m", Batch: MaxBatch + 1}, false},
		{Config{URL: "http://h/v1", Model: "m", Batch: -1}, false},
		{Config{URL: "http://h/v1", Model: "m", Timeout: -time.Second}, false},
		{Config{URL: "mailto:x", Model: "m"}, false},
	} {
		e, err := NewEmbedder(tc.cfg, nil, nil, nil)
		if (err == nil) != tc.ok {
			t.Errorf("NewEmbedder(%+v): %v, want ok %v", tc.cfg, err, tc.ok)
		}
		if err == nil && tc.cfg.Batch == 0 && (e.batch != DefaultBatch || e.timeout != DefaultTimeout) {
			t.Errorf("defaults: batch %d, timeout %v", e.batch, e.timeout)
		}
	}
}

// TestErrors: each way a response can be unusable fails the call with an error that names the endpoint (and
// the HTTP status), never the key; the failure is counted by reason and Healthy turns false.
func TestErrors(t *testing.T) {
	t.Parallel()
	data := func(vs ...[]float32) []fakeDatum {
		out := make([]fakeDatum, len(vs))
		for i, v := range vs {
			out[i] = fakeDatum{Embedding: v, Index: i}
		}
		return out
	}
	two := []string{"one", "two"}
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, in []string)
		is     error
		status int
		text   []string // in the error
		reason string
	}{
		{
			name:   "500",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) { http.Error(w, "boom", 500) },
			status: 500, text: []string{"HTTP 500 Internal Server Error: boom"}, reason: "status",
		},
		{
			name: "401 quoting the key",
			answer: func(w http.ResponseWriter, r *http.Request, _ []string) {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.\nSee docs.","type":"invalid_request_error"}}`,
					strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			},
			status: 401, text: []string{"HTTP 401 Unauthorized: Incorrect API key provided: [redacted]. See docs."},
			reason: "status",
		},
		{
			name: "429 with a long body",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) {
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, strings.Repeat("slow down \x00\xff ", 1000))
			},
			status: 429, text: []string{"HTTP 429 Too Many Requests: slow down ? slow down", "…"}, reason: "status",
		},
		{
			name: "redirect not followed",
			answer: func(w http.ResponseWriter, r *http.Request, _ []string) {
				http.Redirect(w, r, "http://elsewhere.invalid/steal", http.StatusTemporaryRedirect)
			},
			status: 307, reason: "status",
		},
		{
			name:   "malformed JSON",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) { fmt.Fprint(w, `{"data": [`) },
			is:     ErrResponse, text: []string{"unexpected end of JSON input"}, reason: "response",
		},
		{
			name: "base64 vectors",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) {
				fmt.Fprint(w, `{"data":[{"embedding":"AACAPw==","index":0},{"embedding":"AACAPw==","index":1}]}`)
			},
			is: ErrResponse, reason: "response",
		},
		{
			name:   "one vector short",
			answer: func(w http.ResponseWriter, _ *http.Request, in []string) { writeVectors(w, in[1:]) },
			is:     ErrResponse, text: []string{"1 vectors for 2 texts"}, reason: "response",
		},
		{
			name: "one vector too many",
			answer: func(w http.ResponseWriter, _ *http.Request, in []string) {
				writeVectors(w, append(slices.Clone(in), "extra"))
			},
			is: ErrResponse, text: []string{"3 vectors for 2 texts"}, reason: "response",
		},
		{
			name: "repeated index",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) {
				d := data([]float32{1, 0}, []float32{0, 1})
				d[1].Index = 0
				writeJSON(w, d)
			},
			is: ErrResponse, text: []string{"index 0 repeated"}, reason: "response",
		},
		{
			name: "index out of range",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) {
				d := data([]float32{1, 0}, []float32{0, 1})
				d[1].Index = 2
				writeJSON(w, d)
			},
			is: ErrResponse, text: []string{"index 2"}, reason: "response",
		},
		{
			name: "dimensions differ",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) {
				writeJSON(w, data([]float32{1, 0}, []float32{0, 1, 0}))
			},
			is: ErrResponse, text: []string{"3 dimensions"}, reason: "response",
		},
		{
			name:   "empty vector",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) { writeJSON(w, data(nil, nil)) },
			is:     ErrResponse, reason: "response",
		},
		{
			name: "zero vector",
			answer: func(w http.ResponseWriter, _ *http.Request, _ []string) {
				writeJSON(w, data([]float32{1, 0}, []float32{0, 0}))
			},
			is: ErrResponse, text: []string{"vector 1 is zero"}, reason: "response",
		},
		{
			name: "too large",
			answer: func(w http.ResponseWriter, _ *http.Request, in []string) {
				fmt.Fprint(w, `{"data":[`+strings.Repeat(" ", len(in)*responseBytesPerInput)+`]}`)
			},
			is: ErrResponse, text: []string{"more than"}, reason: "response",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newFakeProvider(t)
			p.setAnswer(tc.answer)
			e := newTestEmbedder(t, Config{URL: p.url(), Model: "m", APIKey: testKey}, nil)
			_, err := e.Vectors(t.Context(), map[string]string{"a": two[0], "b": two[1]})
			if err == nil {
				t.Fatal("Vectors succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, testKey) || strings.Contains(msg, "SECRET") {
				t.Errorf("error shows the key: %s", msg)
			}
			if !strings.Contains(msg, p.srv.URL+"/v1/embeddings") {
				t.Errorf("error %q does not name the endpoint", msg)
			}
			for _, s := range tc.text {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", msg, tc.is)
			}
			var he *HTTPError
			if tc.status != 0 && (!errors.As(err, &he) || he.Status != tc.status) {
				t.Errorf("error %q: want an HTTPError of status %d", msg, tc.status)
			}
			if tc.status != 0 && len(he.Message) > errorMessageBytes+len("…") {
				t.Errorf("message of %d bytes", len(he.Message))
			}
			if e.Healthy() {
				t.Error("Healthy after a failure")
			}
			if got := failureCounts(t, e.metrics); !maps.Equal(got, map[string]int64{"documents/" + tc.reason: 1}) {
				t.Errorf("failures %v, want documents/%s 1", got, tc.reason)
			}
			for _, l := range e.logs.lines() {
				if strings.Contains(l, testKey) {
					t.Errorf("log shows the key: %s", l)
				}
			}
			// The query path fails alike.
			if _, err := e.Query(t.Context(), "a query"); err == nil || strings.Contains(err.Error(), testKey) {
				t.Errorf("Query: %v", err)
			}
		})
	}
}

// TestUnreachable: a provider that is not there fails with a transport error naming the endpoint, without the
// key or the credentials of the URL.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	url := strings.Replace(p.url(), "http://", "http://user:"+testKey+"@", 1) + "?key=" + testKey
	e := newTestEmbedder(t, Config{URL: url, Model: "m", APIKey: testKey}, nil)
	p.srv.Close()
	_, err := e.Query(t.Context(), "q")
	if err == nil {
		t.Fatal("Query succeeded with the provider gone")
	}
	if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), p.srv.URL+"/v1/embeddings") {
		t.Errorf("error %q: want the endpoint named and no key", err)
	}
	if got := failureCounts(t, e.metrics); got["query/transport"] != 1 {
		t.Errorf("failures %v, want query/transport 1", got)
	}
	for _, l := range e.logs.lines() {
		if strings.Contains(l, testKey) {
			t.Errorf("log shows the key: %s", l)
		}
	}
}

// blockingTransport is a provider that never answers: each request waits for its context to end.
type blockingTransport struct{ started chan struct{} }

func (b blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.started != nil {
		b.started <- struct{}{}
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestTimeout: a provider that does not answer fails the request after Timeout exactly (synctest's clock), and
// counts as a timeout; a shorter deadline of the caller's wins.
func TestTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newTestEmbedder(t, Config{URL: "http://provider.invalid/v1", Model: "m", Timeout: 3 * time.Second}, nil)
		e.client.Transport = blockingTransport{}
		start := time.Now()
		_, err := e.Query(t.Context(), "q")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Query: %v, want context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("Query gave up after %v, want the Timeout of 3s", took)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if _, err := e.Vectors(ctx, map[string]string{"a": "x"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Vectors: %v, want context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Vectors gave up after %v, want the caller's deadline of 1s", took)
		}
		want := map[string]int64{"query/timeout": 1, "documents/timeout": 1}
		if got := failureCounts(t, e.metrics); !maps.Equal(got, want) {
			t.Errorf("failures %v, want %v", got, want)
		}
	})
}

// TestCancelled: a call its caller cancels fails with context.Canceled and is no failure of the provider's.
func TestCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newTestEmbedder(t, Config{URL: "http://provider.invalid/v1", Model: "m"}, nil)
		started := make(chan struct{})
		e.client.Transport = blockingTransport{started: started}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := e.Query(ctx, "q")
			done <- err
		}()
		<-started
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Query: %v, want context.Canceled", err)
		}
		if !e.Healthy() {
			t.Error("a cancelled call made the provider unhealthy")
		}
		if got := failureCounts(t, e.metrics); len(got) != 0 {
			t.Errorf("failures %v, want none", got)
		}
		if lines := e.logs.lines(); len(lines) != 0 {
			t.Errorf("logs %q, want none", lines)
		}
	})
}

// TestOutageLogging: one warning when an outage starts, however many failures it has, and one line when it ends;
// every failure is counted.
func TestOutageLogging(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m", APIKey: testKey}, nil)
	ctx := t.Context()
	down := func(w http.ResponseWriter, _ *http.Request, _ []string) { http.Error(w, "down", http.StatusBadGateway) }
	steps := []struct {
		fail    bool
		healthy bool
	}{{false, true}, {true, false}, {true, false}, {true, false}, {false, true}, {false, true}, {true, false}}
	for i, s := range steps {
		if s.fail {
			p.setAnswer(down)
		} else {
			p.setAnswer(nil)
		}
		_, err := e.Query(ctx, fmt.Sprintf("query %d", i))
		if (err != nil) != s.fail {
			t.Fatalf("step %d: %v", i, err)
		}
		if e.Healthy() != s.healthy {
			t.Errorf("step %d: Healthy %v", i, e.Healthy())
		}
	}
	lines := e.logs.lines()
	if len(lines) != 3 ||
		!strings.HasPrefix(lines[0], "WARN embeddings provider failed") || !strings.Contains(lines[0], "HTTP 502") ||
		!strings.HasPrefix(lines[1], "INFO embeddings provider answers again") || !strings.Contains(lines[1], "failures=3") ||
		!strings.HasPrefix(lines[2], "WARN embeddings provider failed") {
		t.Errorf("logs:\n%s\nwant a warning, a recovery after 3 failures, a warning", strings.Join(lines, "\n"))
	}
	if got := failureCounts(t, e.metrics); !maps.Equal(got, map[string]int64{"query/status": 4}) {
		t.Errorf("failures %v, want query/status 4", got)
	}
}

// TestConcurrent: many goroutines embedding and querying at once (run with -race).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	e := newTestEmbedder(t, Config{URL: p.url(), Model: "m", Batch: 3}, nil)
	docs := map[string]string{}
	for i := range 20 {
		docs[fmt.Sprint(i)] = fmt.Sprintf("text %d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			got, err := e.Vectors(t.Context(), docs)
			if err == nil && len(got) != len(docs) {
				err = fmt.Errorf("%d vectors", len(got))
			}
			errs <- err
		})
		wg.Go(func() {
			_, err := e.Query(t.Context(), fmt.Sprintf("query %d", i%3))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

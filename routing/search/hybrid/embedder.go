package hybrid

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/sync/errgroup"
)

// Defaults and bounds of an Embedder.
const (
	// DefaultTimeout bounds each request to the provider when Config.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultBatch is how many texts one request carries when Config.Batch is zero.
	DefaultBatch = 64
	// MaxBatch is the most texts one request carries (OpenAI's limit is 2,048 inputs).
	MaxBatch = 2048
	// MaxInputBytes bounds each text sent: longer ones are cut (at a character boundary), well within the 8,192
	// tokens of OpenAI's models, so that one long description does not fail its whole batch.
	MaxInputBytes = 8 << 10
	// MaxDims bounds the length of a vector the provider returns.
	MaxDims = 16_384
)

const (
	// responseBytesPerInput bounds a response: this much per text asked for (4,096 dimensions written out as JSON
	// take about 100 KB).
	responseBytesPerInput = 256 << 10
	// errorBodyBytes is how much of an error response is read, and errorMessageBytes how much of it is quoted.
	errorBodyBytes    = 4 << 10
	errorMessageBytes = 200
	// parallelRequests is how many batches Vectors has in flight at once.
	parallelRequests = 4
	// queryCacheEntries is the size of the cache of query vectors.
	queryCacheEntries = 256
)

// ErrResponse is wrapped by the errors for a response the Embedder cannot use: malformed, too large, or with
// other vectors than it asked for.
var ErrResponse = errors.New("hybrid: unusable embeddings response")

// HTTPError is the error for a response with a status other than 200. Message is the provider's (its
// error.message, or the start of its body), cut short, with the API key redacted if it quoted it.
type HTTPError struct {
	Endpoint string // the embeddings URL, without credentials or query
	Status   int
	Message  string
}

// Error implements error.
func (e *HTTPError) Error() string {
	s := fmt.Sprintf("hybrid: embeddings at %s: HTTP %d %s", e.Endpoint, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Config names an OpenAI-compatible embeddings endpoint.
type Config struct {
	// URL is the API's base URL (https://api.openai.com/v1: requests go to URL + "/embeddings"), or the
	// embeddings endpoint itself (a URL ending in /embeddings). http and https only.
	URL string
	// Model is the embedding model, sent with each request. Required.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>". It is never logged nor put in an error.
	APIKey string
	// Timeout bounds each request (DefaultTimeout when zero).
	Timeout time.Duration
	// Batch is how many texts one request carries (DefaultBatch when zero; at most MaxBatch).
	Batch int
}

// Embedder turns texts into unit-length vectors with an embeddings provider, caching them. It is safe for
// concurrent use.
type Embedder struct {
	endpoint string // where requests go
	shown    string // the endpoint as errors and logs name it
	model    string
	key      string
	timeout  time.Duration
	batch    int
	client   *http.Client

	cache   VectorCache  // documents
	queries *MemoryCache // queries
	log     *slog.Logger

	failures metric.Int64Counter
	failing  atomic.Bool  // since a failure, until a success
	outage   atomic.Int64 // failures since the last success
}

// NewEmbedder returns an Embedder for cfg. Document vectors are kept in cache (a MemoryCache of
// DefaultCacheEntries when nil). logger nil discards logs; mp nil records no metrics. It does not contact the
// provider.
func NewEmbedder(cfg Config, cache VectorCache, logger *slog.Logger, mp metric.MeterProvider) (*Embedder, error) {
	endpoint, shown, err := endpointURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("hybrid: embeddings: no model")
	}
	if cfg.Timeout < 0 || cfg.Batch < 0 || cfg.Batch > MaxBatch {
		return nil, fmt.Errorf("hybrid: embeddings: timeout %v, batch %d: want timeout >= 0 and batch 0 to %d",
			cfg.Timeout, cfg.Batch, MaxBatch)
	}
	if cache == nil {
		cache = NewMemoryCache(0)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	failures, err := mp.Meter("github.com/switchboard-mcp/switchboard/routing/search/hybrid").Int64Counter(
		"switchboard.search.embeddings.failures",
		metric.WithDescription("Requests to the embeddings provider that failed, by operation (documents, query) "+
			"and reason (timeout, transport, status, response); tool search falls back to BM25 meanwhile."))
	if err != nil {
		return nil, fmt.Errorf("hybrid: embeddings metric: %w", err)
	}
	e := &Embedder{
		endpoint: endpoint,
		shown:    shown,
		model:    cfg.Model,
		key:      cfg.APIKey,
		timeout:  orDefault(cfg.Timeout, DefaultTimeout),
		batch:    orDefault(cfg.Batch, DefaultBatch),
		client: &http.Client{
			// A redirect would take the key elsewhere, or turn the POST into a GET: none is followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		cache:    cache,
		queries:  NewMemoryCache(queryCacheEntries),
		log:      logger,
		failures: failures,
	}
	return e, nil
}

// orDefault is v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// endpointURL checks a configured URL and returns where to POST and how to name it: without user info or query,
// which may hold credentials.
func endpointURL(raw string) (endpoint, shown string, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", "", errors.New("hybrid: embeddings URL does not parse") // the error would quote the URL
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", "", fmt.Errorf("hybrid: embeddings URL %s: want http or https and a host", redact(u))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if !strings.HasSuffix(u.Path, "/embeddings") {
		u.Path += "/embeddings"
	}
	return u.String(), redact(u), nil
}

func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// Healthy reports whether the provider answered the last request made to it (true before any).
func (e *Embedder) Healthy() bool { return !e.failing.Load() }

// Vectors returns a unit-length vector for each text of docs (name → text), under the same names. Vectors of
// texts embedded before come from the cache; the others are asked of the provider in batches, a few at a time, and
// cached as each batch comes. A text is cached under the model and its SHA-256, so the names only label the
// result and a text shared by several names is embedded once. Empty texts get no vector. Texts longer than
// MaxInputBytes are cut first. When the cache fails, every text is asked of the provider (and the failure logged);
// when the provider fails, Vectors returns the error, and what it cached stays cached for the next call.
//
// The vectors returned may be shared with the cache: do not modify them.
func (e *Embedder) Vectors(ctx context.Context, docs map[string]string) (map[string][]float32, error) {
	textOf := make(map[string]string, len(docs)) // cache key → text
	keyOf := make(map[string]string, len(docs))  // name → cache key
	for name, text := range docs {
		text = cut(text)
		if strings.TrimSpace(text) == "" {
			continue
		}
		k := e.cacheKey(text)
		textOf[k], keyOf[name] = text, k
	}
	keys := slices.Sorted(maps.Keys(textOf))
	out := make(map[string][]float32, len(keys)) // cache key → vector
	if len(keys) > 0 {
		cached, err := e.cache.GetVectors(ctx, keys)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("hybrid: vector cache: %w", err)
			}
			e.log.WarnContext(ctx, "vector cache failed; embedding every document again", "error", err)
		}
		for k, v := range cached {
			if _, asked := textOf[k]; asked && len(v) > 0 {
				out[k] = v
			}
		}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(parallelRequests)
		for batch := range slices.Chunk(missing, e.batch) {
			g.Go(func() error {
				texts := make([]string, len(batch))
				for i, k := range batch {
					texts[i] = textOf[k]
				}
				vecs, err := e.embed(gctx, texts)
				if err != nil {
					return err
				}
				got := make(map[string][]float32, len(batch))
				for i, k := range batch {
					got[k] = vecs[i]
				}
				if err := e.cache.SetVectors(gctx, got); err != nil && gctx.Err() == nil {
					e.log.WarnContext(gctx, "vector cache failed; vectors not kept", "error", err)
				}
				mu.Lock()
				maps.Copy(out, got)
				mu.Unlock()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			e.failed(ctx, "documents", err)
			return nil, err
		}
		e.succeeded(ctx)
	}
	res := make(map[string][]float32, len(keyOf))
	for name, k := range keyOf {
		res[name] = out[k]
	}
	return res, nil
}

// Query returns the unit-length vector of a query, from a small cache of recent queries or the provider. The
// vector returned may be shared with the cache: do not modify it.
func (e *Embedder) Query(ctx context.Context, text string) ([]float32, error) {
	text = cut(text)
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("hybrid: empty query")
	}
	k := e.cacheKey(text)
	if v, ok := e.queries.get(k); ok {
		return v, nil
	}
	vecs, err := e.embed(ctx, []string{text})
	if err != nil {
		e.failed(ctx, "query", err)
		return nil, err
	}
	e.succeeded(ctx)
	e.queries.keep(k, vecs[0])
	return vecs[0], nil
}

// cacheKey is the key of text's vector: the provider, the model and the text's SHA-256. The provider counts
// because two services may serve models of one name with other vectors, and replicas of different configs may
// share one Redis; it is the endpoint as logs show it (no user info, no query), hashed to keep keys short.
func (e *Embedder) cacheKey(text string) string {
	sum := sha256.Sum256([]byte(text))
	provider := sha256.Sum256([]byte(e.shown))
	return e.model + "@" + hex.EncodeToString(provider[:6]) + ":" + hex.EncodeToString(sum[:])
}

// cut shortens text to at most MaxInputBytes, at a character boundary.
func cut(text string) string {
	if len(text) <= MaxInputBytes {
		return text
	}
	i := MaxInputBytes
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	return text[:i]
}

type embeddingsRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embeddingsResponse struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     *int      `json:"index"`
	} `json:"data"`
}

// embed asks the provider for the vectors of texts, in one request, and returns them normalised, in order.
func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	body, err := json.Marshal(embeddingsRequest{Model: e.model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("hybrid: embeddings request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("hybrid: embeddings at %s: %w", e.shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, which may carry credentials
		}
		return nil, fmt.Errorf("hybrid: embeddings at %s: %w", e.shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
		return nil, &HTTPError{Endpoint: e.shown, Status: resp.StatusCode, Message: e.message(b)}
	}
	limit := int64(len(texts)) * responseBytesPerInput
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("hybrid: embeddings at %s: reading the response: %w", e.shown, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w from %s: more than %d bytes for %d texts", ErrResponse, e.shown, limit, len(texts))
	}
	var r embeddingsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w from %s: %w", ErrResponse, e.shown, err)
	}
	return e.vectors(r, len(texts))
}

// vectors checks a response against the n texts asked for and returns its vectors, normalised, in input order.
func (e *Embedder) vectors(r embeddingsResponse, n int) ([][]float32, error) {
	if len(r.Data) != n {
		return nil, fmt.Errorf("%w from %s: %d vectors for %d texts", ErrResponse, e.shown, len(r.Data), n)
	}
	out := make([][]float32, n)
	dims := len(r.Data[0].Embedding)
	for pos, d := range r.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n || out[i] != nil {
			return nil, fmt.Errorf("%w from %s: index %d repeated or out of 0 to %d", ErrResponse, e.shown, i, n-1)
		}
		if len(d.Embedding) == 0 || len(d.Embedding) > MaxDims || len(d.Embedding) != dims {
			return nil, fmt.Errorf("%w from %s: vector %d of %d dimensions (the first has %d; at most %d)",
				ErrResponse, e.shown, i, len(d.Embedding), dims, MaxDims)
		}
		v := normalize(d.Embedding)
		if v == nil {
			return nil, fmt.Errorf("%w from %s: vector %d is zero", ErrResponse, e.shown, i)
		}
		out[i] = v
	}
	return out, nil
}

// message is what an error response says, fit to quote: the error.message of OpenAI's error object, else the
// body; the API key redacted; control characters and invalid UTF-8 replaced; cut short.
func (e *Embedder) message(body []byte) string {
	var obj struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := string(body)
	if json.Unmarshal(body, &obj) == nil && obj.Error.Message != "" {
		msg = obj.Error.Message
	}
	if e.key != "" {
		msg = strings.ReplaceAll(msg, e.key, "[redacted]")
	}
	msg = strings.ToValidUTF8(msg, "?")
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, msg)
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > errorMessageBytes {
		i := errorMessageBytes
		for i > 0 && !utf8.RuneStart(msg[i]) {
			i--
		}
		msg = msg[:i] + "…"
	}
	return msg
}

// reason classifies a failure for the metric.
func reason(err error) string {
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		return "status"
	case errors.Is(err, ErrResponse):
		return "response"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "transport"
	}
}

// failed records a failure of the provider: counted, and logged when it starts an outage. A call its caller
// cancelled is neither.
func (e *Embedder) failed(ctx context.Context, op string, err error) {
	if errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	why := reason(err)
	e.failures.Add(context.WithoutCancel(ctx), 1,
		metric.WithAttributes(attribute.String("operation", op), attribute.String("reason", why)))
	e.outage.Add(1)
	if e.failing.CompareAndSwap(false, true) {
		e.log.WarnContext(ctx, "embeddings provider failed; tool search falls back to BM25 until it answers",
			"endpoint", e.shown, "operation", op, "reason", why, "error", err)
	}
}

// succeeded records an answer of the provider, logging the end of an outage.
func (e *Embedder) succeeded(ctx context.Context) {
	if e.failing.CompareAndSwap(true, false) {
		e.log.InfoContext(ctx, "embeddings provider answers again; hybrid tool search resumed",
			"endpoint", e.shown, "failures", e.outage.Swap(0))
	}
}

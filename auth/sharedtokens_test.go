package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// memTokenStore is a TokenStore in a map, shared by the sources of a test as Redis is by replicas; down makes
// every call fail, as an unreachable store does.
type memTokenStore struct {
	mu     sync.Mutex
	tokens map[string][]byte
	ttls   map[string]time.Duration
	down   bool
}

func (m *memTokenStore) GetToken(_ context.Context, principal, upstream string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errors.New("store down")
	}
	b, ok := m.tokens[principal+"\x00"+upstream]
	if !ok {
		return nil, errors.New("not found")
	}
	return bytes.Clone(b), nil
}

func (m *memTokenStore) PutToken(_ context.Context, principal, upstream string, sealed []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("store down")
	}
	if m.tokens == nil {
		m.tokens, m.ttls = map[string][]byte{}, map[string]time.Duration{}
	}
	m.tokens[principal+"\x00"+upstream] = bytes.Clone(sealed)
	m.ttls[principal+"\x00"+upstream] = ttl
	return nil
}

func (m *memTokenStore) DeleteToken(_ context.Context, principal, upstream string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("store down")
	}
	delete(m.tokens, principal+"\x00"+upstream)
	return nil
}

// TestIDJAGSharedTokens: two sources over one store (two replicas) share each person's token, sealed: the second
// replica serves alice with the first one's token and no exchange, as it does her new ID token; a refusal is not
// stored, and is asked again; the store holds no assertion, ID-JAG or token in the clear, each for as long as
// the token lives but a minute; a source configured differently under the same upstream name (a reload) does not
// open them; a store that fails costs exchanges, never a request.
func TestIDJAGSharedTokens(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{} // exchanges at the IdP, by person
	idp := fakeIdP(t, func(rest string) (string, bool) {
		who, _, _ := strings.Cut(rest, "-")
		mu.Lock()
		calls[who]++
		mu.Unlock()
		return who, who != "mallory"
	})
	as := fakeJAGServer(t, func(who string) string { return "at-" + who })
	keys := map[string][]byte{"k1": bytes.Repeat([]byte{7}, vault.KeySize)}
	sealer, err := vault.NewKeyring("k1", keys)
	if err != nil {
		t.Fatal(err)
	}
	store := &memTokenStore{}
	ctx := context.Background()
	cfg := IDJAGConfig{IdPTokenURL: idp.URL, Audience: "https://as.example", Resource: "https://mcp.example/mcp",
		TokenURL: as.URL, ClientID: "gw", ClientSecret: "gw-secret"}
	replica := func(cfg IDJAGConfig) *TokenExchangeSource {
		src, err := NewCredentialSource(ctx, CredentialOptions{Upstream: "crm", IDJAG: &cfg,
			Shared: &SharedTokens{Store: store, Sealer: sealer}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return src.(*TokenExchangeSource)
	}
	a, b := replica(cfg), replica(cfg)
	person := func(name, token string) *Principal {
		return &Principal{Subject: name, Issuer: "https://idp.example", token: token, Expiry: time.Now().Add(2 * time.Hour)}
	}
	call := func(src *TokenExchangeSource, p *Principal) string {
		t.Helper()
		h, err := src.Header(ctx, p)
		if err != nil {
			return err.Error()
		}
		return h.Get("Authorization")
	}
	exchanges := func(who string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[who]
	}

	steps := []struct {
		what      string
		src       *TokenExchangeSource
		p         *Principal
		want      string
		exchanges int // alice's, after the step
	}{
		{"alice on replica a", a, person("alice", "idtoken-alice-1"), "Bearer at-alice", 1},
		{"alice on replica b", b, person("alice", "idtoken-alice-1"), "Bearer at-alice", 1},
		{"alice's new ID token on replica b", b, person("alice", "idtoken-alice-2"), "Bearer at-alice", 1},
		{"alice on a new replica", replica(cfg), person("alice", "idtoken-alice-2"), "Bearer at-alice", 1},
	}
	for _, s := range steps {
		if got := call(s.src, s.p); got != s.want {
			t.Errorf("%s: %q, want %q", s.what, got, s.want)
		}
		if n := exchanges("alice"); n != s.exchanges {
			t.Errorf("%s: %d exchanges for alice so far, want %d", s.what, n, s.exchanges)
		}
	}

	// A refusal is not kept: asked again on the other replica.
	for _, src := range []*TokenExchangeSource{a, b} {
		if got := call(src, person("mallory", "idtoken-mallory")); !strings.Contains(got, "access_denied") {
			t.Errorf("mallory: %q, want the IdP's refusal", got)
		}
	}
	if n := exchanges("mallory"); n != 2 {
		t.Errorf("%d exchanges for mallory, want 2 (a refusal is not cached)", n)
	}

	// Sealed: nothing of the person's tokens is in the store, and each is kept 59 minutes of its hour.
	store.mu.Lock()
	if len(store.tokens) != 1 {
		t.Errorf("%d tokens stored, want 1 (alice's)", len(store.tokens))
	}
	for k, v := range store.tokens {
		for _, secret := range []string{"idtoken-", "jag-", "at-alice", "Bearer"} {
			if bytes.Contains(v, []byte(secret)) || strings.Contains(k, secret) {
				t.Errorf("the store holds %q in the clear under %q", secret, k)
			}
		}
		if ttl := store.ttls[k]; ttl <= 58*time.Minute || ttl > 59*time.Minute {
			t.Errorf("stored for %v, want a minute less than the token's hour", ttl)
		}
	}
	store.mu.Unlock()

	// Another configuration under the same name (a reload that changed the resource) does not open the token.
	other := cfg
	other.Resource = "https://other.example/mcp"
	if got := call(replica(other), person("alice", "idtoken-alice-2")); got != "Bearer at-alice" || exchanges("alice") != 2 {
		t.Errorf("alice under another resource: %q after %d exchanges; want a new exchange", got, exchanges("alice"))
	}

	// Past its expiry, no replica uses it.
	later := replica(other)
	later.now = func() time.Time { return time.Now().Add(time.Hour) }
	if call(later, person("alice", "idtoken-alice-2")); exchanges("alice") != 3 {
		t.Errorf("%d exchanges for alice; want 3 (the stored token has expired an hour on)", exchanges("alice"))
	}

	// A store that fails: the source exchanges.
	store.mu.Lock()
	store.down = true
	store.mu.Unlock()
	if got := call(replica(cfg), person("bob", "idtoken-bob")); got != "Bearer at-bob" || exchanges("bob") != 1 {
		t.Errorf("bob with the store down: %q after %d exchanges", got, exchanges("bob"))
	}
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()

}

// TestIDJAGSingleFlight: callers for one person on one replica, at once, share one exchange and the one look-up in
// the store before it, whatever their ID tokens; another person's is their own.
func TestIDJAGSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &memTokenStore{}
		sealer, err := vault.NewKeyring("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, vault.KeySize)})
		if err != nil {
			t.Fatal(err)
		}
		src, err := NewCredentialSource(t.Context(), CredentialOptions{Upstream: "crm", IDJAG: &IDJAGConfig{},
			Shared: &SharedTokens{Store: store, Sealer: sealer}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := src.(*TokenExchangeSource)
		release := make(chan struct{})
		var mu sync.Mutex
		fetches := map[string]int{}
		s.fetch = func(ctx context.Context, p *Principal) (exchanged, error) {
			mu.Lock()
			fetches[p.Subject]++
			mu.Unlock()
			<-release
			return exchanged{header: "Bearer at-" + p.Subject, expires: time.Now().Add(time.Hour)}, nil
		}
		var wg sync.WaitGroup
		got := make([]string, 9)
		for i := range got {
			who := "carol"
			if i == 8 {
				who = "dave"
			}
			p := &Principal{Subject: who, Issuer: "https://idp.example", token: fmt.Sprintf("idtoken-%s-%d", who, i)}
			wg.Go(func() {
				h, err := s.Header(t.Context(), p)
				got[i] = fmt.Sprint(h.Get("Authorization"), err)
			})
		}
		synctest.Wait() // every caller waits: the first of each person in fetch, the others for it
		close(release)
		wg.Wait()
		for i, g := range got {
			if want := "Bearer at-carol<nil>"; i < 8 && g != want || i == 8 && g != "Bearer at-dave<nil>" {
				t.Errorf("call %d: %q", i, g)
			}
		}
		if fetches["carol"] != 1 || fetches["dave"] != 1 {
			t.Errorf("fetches %v; want one for each person", fetches)
		}
	})
}

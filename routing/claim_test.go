package routing

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/state"
)

// failingStore is a session store that cannot be reached.
type failingStore struct{ state.SessionRecord }

var errUnreachable = errors.New("store unreachable")

func (failingStore) Create(context.Context, state.SessionRecord) error { return errUnreachable }
func (failingStore) Get(context.Context, string) (state.SessionRecord, error) {
	return state.SessionRecord{}, errUnreachable
}
func (failingStore) Update(context.Context, string, func(*state.SessionRecord) error) error {
	return errUnreachable
}
func (failingStore) Touch(context.Context, string) error  { return errUnreachable }
func (failingStore) Delete(context.Context, string) error { return errUnreachable }

var _ sessionStore = failingStore{}

// TestClaimSession: a session id is served only to the principal that started the session, at the endpoint it
// started on, whether this replica holds it or restores it from the shared store; a restore asks for the
// claimant's policy and tells the front end; a store that cannot answer is an error, never "no such session".
func TestClaimSession(t *testing.T) {
	store := state.NewMemory()
	t.Cleanup(store.Shutdown)
	up := newMutableUpstream(honestTools)
	cfg := UpstreamConfig{Name: "fs", Prefix: "fs__", Mode: Shared, Transport: up.fakeTransport, Kind: "stdio"}
	here := startRouter(t, Options{Store: store, Bus: store}, cfg)
	own := here.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(defaultClientCaps),
		Principal: "alice", Endpoint: "ops"})

	for _, tc := range []struct {
		name                    string
		id, principal, endpoint string
		elsewhere               bool // claimed on a replica that does not hold it
		want                    bool
	}{
		{name: "held, its owner", id: own.ID(), principal: "alice", endpoint: "ops", want: true},
		{name: "held, another principal", id: own.ID(), principal: "mallory", endpoint: "ops"},
		{name: "held, another endpoint", id: own.ID(), principal: "alice", endpoint: ""},
		{name: "held, unknown id", id: "nope", principal: "alice", endpoint: "ops"},
		{name: "restored, its owner", id: own.ID(), principal: "alice", endpoint: "ops", elsewhere: true, want: true},
		{name: "restored, another principal", id: own.ID(), principal: "mallory", endpoint: "ops", elsewhere: true},
		{name: "restored, another endpoint", id: own.ID(), principal: "alice", endpoint: "dev", elsewhere: true},
		{name: "restored, unknown id", id: "nope", principal: "alice", endpoint: "ops", elsewhere: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := here
			if tc.elsewhere {
				r = startRouter(t, Options{Store: store, Bus: store}, cfg)
			}
			var asked, told int
			got, err := r.ClaimSession(context.Background(), Claim{ID: tc.id, Principal: tc.principal, Endpoint: tc.endpoint,
				Caller: func(context.Context) (Allow, func(context.Context) context.Context) {
					asked++
					return nil, nil
				},
				Restored: func(*Session) { told++ }})
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.want {
				t.Fatalf("claimed %v, want a session: %v", got != nil, tc.want)
			}
			restored := tc.want && tc.elsewhere
			if wantN := map[bool]int{true: 1, false: 0}[restored]; asked != wantN || told != wantN {
				t.Errorf("policy asked %d times, restore told %d times; want %d", asked, told, wantN)
			}
			if !tc.want && tc.elsewhere && r.SessionCount() != 0 {
				t.Errorf("a refused claim left a session on the replica: %d held", r.SessionCount())
			}
			if restored && (got.ID() != own.ID() || got.Principal() != "alice" || got.Endpoint() != "ops") {
				t.Errorf("restored %s of %q at %q", got.ID(), got.Principal(), got.Endpoint())
			}
		})
	}

	t.Run("store unreachable", func(t *testing.T) {
		r := startRouter(t, Options{Store: failingStore{}}, cfg)
		got, err := r.ClaimSession(context.Background(), Claim{ID: own.ID(), Principal: "alice", Endpoint: "ops"})
		if got != nil || !errors.Is(err, errStoreUnavailable) {
			t.Fatalf("claimed %v, %v; want errStoreUnavailable", got, err)
		}
	})
}

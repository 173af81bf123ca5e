// Package connect is the HTTP side of connecting a person's upstream account
// in-band (issue 17, items 3 to 6): the link a URL-mode elicitation carries,
// the pages the browser goes through, and the tokens the router later uses.
//
//   - Links mints the link: a random 256-bit id kept in the state store,
//     single-use, short-lived, bound to the principal and the upstream.
//   - Handler serves /connect/: the link sends the signed-in browser to the
//     upstream's authorization server, the callback stores the grant sealed
//     and has the session notified, and the Client ID Metadata Document is
//     served for authorization servers that fetch it.
//   - Tokens gives the router a principal's access token for an upstream,
//     refreshed once across every replica (before expiry, and once after
//     an upstream's 401), and disconnects and revokes.
//   - Discovery finds each configured upstream's authorization server and
//     the gateway's client there (pre-registered, the metadata document,
//     or one registration shared by the replicas), for the others' flows.
//
// The MCP specification (2025-11-25, Elicitation, URL mode) binds the
// elicitation's state to the user, not to the session; as issue 17 puts it,
// "a link sent to the wrong person must not connect their account to
// someone else's session". So every page that acts for a principal runs
// behind the gateway's own browser sign-in (auth/browser) and refuses a
// browser signed in as anyone else. The link is consumed before that check,
// so a link sent to the wrong person is dead for everyone.
//
// Secrets: link ids, OAuth state values, codes, PKCE verifiers and tokens
// are never logged, rendered, or put in an error this package returns. The
// state store's own errors name the key they were given, so they are
// redacted before they are logged.
package connect

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// Store is the part of the shared state (routing/state's GrantStore) this
// package uses: connect records, grants and the refresh lock.
type Store interface {
	// PutConnect stores rec under id for ttl; state.ErrExists if taken.
	PutConnect(ctx context.Context, id string, rec state.ConnectRecord, ttl time.Duration) error
	// TakeConnect returns id's record and deletes it atomically;
	// state.ErrNotFound when there is none or it expired.
	TakeConnect(ctx context.Context, id string) (state.ConnectRecord, error)
	// PutGrant stores principal's sealed grant for upstream.
	PutGrant(ctx context.Context, principal, upstream string, sealed []byte) error
	// GetGrant returns principal's sealed grant for upstream;
	// state.ErrNotFound when there is none.
	GetGrant(ctx context.Context, principal, upstream string) ([]byte, error)
	// DeleteGrant removes principal's grant for upstream.
	DeleteGrant(ctx context.Context, principal, upstream string) error
	// DeleteUpstreamGrants removes every grant for upstream and returns
	// how many there were.
	DeleteUpstreamGrants(ctx context.Context, upstream string) (int, error)
	// UpstreamGrants returns upstream's grants by principal (at most
	// state.MaxListedGrants), so that RevokeUpstream revokes them at the
	// authorization server too.
	UpstreamGrants(ctx context.Context, upstream string) (map[string][]byte, error)
	// TryLock takes key for at most ttl unless another caller holds it.
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// Flows gives the authorization flow of an upstream. Discovery, the client
// identity (pre-registered, metadata document or registration) and caching
// them are the implementation's (Discovery is one): the rest of this
// package only runs the flow. An implementation that caches flows may also
// have a method Forget(upstream string), which Tokens and Handler call when
// the authorization server rejects a flow's client (invalid_client), so
// that the next Flow finds a client that works.
type Flows interface {
	// Flow returns upstream's flow; an error when the upstream is unknown
	// (wrapping ErrUnknownUpstream, for the handler's 404) or its
	// authorization server cannot be used now.
	Flow(ctx context.Context, upstream string) (*upstreamauth.Flow, error)
}

// forgetter is a Flows with Forget (see Flows).
type forgetter interface {
	Forget(upstream string)
}

// clientRejected tells flows, when it can forget, that err is the token
// endpoint rejecting upstream's client (RFC 6749 §5.2 invalid_client: the
// registration is gone, or the secret wrong).
func clientRejected(flows Flows, upstream string, err error) {
	var oe *upstreamauth.OAuthError
	if !errors.As(err, &oe) || oe.Endpoint != upstreamauth.EndpointToken || oe.Code != "invalid_client" {
		return
	}
	if f, ok := flows.(forgetter); ok {
		f.Forget(upstream)
	}
}

// Notifier tells the MCP session that asked for a connection that it
// completed, with notifications/elicitation/complete, on whichever replica
// holds the session. Delivering it (and logging a failure) is the
// implementation's business: the grant is stored whatever becomes of the
// notification, and the client's retried call finds it.
type Notifier interface {
	// Completed is called once per completed connection, with the link's
	// record (its Pending emptied): Principal, Upstream, Session and
	// ElicitationID.
	Completed(ctx context.Context, rec state.ConnectRecord)
}

// Sealer encrypts what this package keeps in the store: the pending
// authorization (state and PKCE verifier) and the grant. auth/vault's
// Keyring is one.
type Sealer interface {
	// Seal encrypts plaintext bound to aad.
	Seal(plaintext, aad []byte) ([]byte, error)
	// Open decrypts sealed, checking aad.
	Open(sealed, aad []byte) ([]byte, error)
}

// Our implementations of the interfaces above.
var (
	_ Store  = (*state.Memory)(nil)
	_ Store  = (*state.Redis)(nil)
	_ Sealer = (*vault.Keyring)(nil)
)

// Paths under the gateway's public URL. The handler is mounted at Prefix.
const (
	// Prefix is where Handler is mounted (with its trailing slash).
	Prefix = "/connect/"
	// CallbackPath is the OAuth redirect URI's path.
	CallbackPath = "/connect/callback"
	// MetadataDocumentPath is where the Client ID Metadata Document is
	// served.
	MetadataDocumentPath = "/connect/client-metadata.json"
	// StartPath, followed by an upstream's name, starts a connection for
	// the signed-in browser user, without a link: the connections page's
	// connect button.
	StartPath = "/connect/start/"
)

// StartURL is where the connections page sends a person to connect
// upstream, for a gateway reached at publicURL.
func StartURL(publicURL, upstream string) string {
	return strings.TrimRight(publicURL, "/") + StartPath + url.PathEscape(upstream)
}

// CallbackURL is the redirect URI to register (FlowConfig.RedirectURL) for
// a gateway reached at publicURL.
func CallbackURL(publicURL string) string {
	return strings.TrimRight(publicURL, "/") + CallbackPath
}

// MetadataDocumentURL is the client_id to use as a Client ID Metadata
// Document (upstreamauth.ChooseIdentity's cimdURL) for a gateway reached at
// publicURL.
func MetadataDocumentURL(publicURL string) string {
	return strings.TrimRight(publicURL, "/") + MetadataDocumentPath
}

// NotConnectedError says that a principal holds no usable grant for an
// upstream: none was stored, it no longer opens, or the authorization
// server refused to refresh it. The person must connect (again). It matches
// ErrNotConnected with errors.Is.
type NotConnectedError struct {
	// Upstream is the upstream to connect.
	Upstream string
	// Reason says why, without a secret.
	Reason string
}

// ErrNotConnected is what every *NotConnectedError is, for errors.Is.
var ErrNotConnected = errors.New("connect: not connected")

// Error names the upstream and the reason.
func (e *NotConnectedError) Error() string {
	return fmt.Sprintf("connect: not connected to %s: %s", e.Upstream, e.Reason)
}

// Is reports whether target is ErrNotConnected.
func (e *NotConnectedError) Is(target error) bool { return target == ErrNotConnected }

// checkNames refuses a principal or an upstream that would make the
// associated data or the lock key ambiguous: the vault requires that "no
// two contexts may produce the same bytes", and NUL is the separator.
func checkNames(principal, upstream string) error {
	if principal == "" || upstream == "" {
		return errors.New("connect: a principal and an upstream are required")
	}
	if strings.ContainsRune(principal, 0) || strings.ContainsRune(upstream, 0) {
		return errors.New("connect: a principal or an upstream contains NUL")
	}
	return nil
}

// grantAAD binds a sealed grant to its entry in the store, so that a blob
// copied to another user's or upstream's entry does not open (vault's
// "principal + \x00 + upstream").
func grantAAD(principal, upstream string) []byte {
	return []byte(principal + "\x00" + upstream)
}

// pendingAAD binds a sealed pending authorization to its principal and
// upstream, and apart from grants: a pending record moved into a grant's
// entry does not open.
func pendingAAD(principal, upstream string) []byte {
	return []byte("pending\x00" + principal + "\x00" + upstream)
}

// registrationAAD binds a sealed client registration to its upstream and
// issuer, and apart from grants and pending authorizations (their first
// part differs, and neither has a third NUL-separated part).
func registrationAAD(upstream, issuer string) []byte {
	return []byte("registration\x00" + upstream + "\x00" + issuer)
}

// redactedError is an error from the state store with the secrets it names
// (a link id, a state value: the store's errors name the key they were
// given) cut out of its text. It unwraps to the original, so that
// errors.Is(err, state.ErrUnavailable) still works; only its text changes.
type redactedError struct {
	msg string
	err error
}

// Error is the original text, redacted.
func (e *redactedError) Error() string { return e.msg }

// Unwrap gives the original error, for errors.Is and errors.As only: never
// print it.
func (e *redactedError) Unwrap() error { return e.err }

// redacted wraps err with each secret replaced in its text.
func redacted(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	s := err.Error()
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return &redactedError{msg: s, err: err}
}

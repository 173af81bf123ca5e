// Package upstreamauth makes the gateway an OAuth 2.1 client of an upstream
// MCP server's own authorization server, the way the MCP authorization
// specification (2025-11-25) has a client do it, so that each person reaches
// the upstream with their own grant (issue 17).
//
// The steps, in the order a caller uses them:
//
//   - ParseChallenge reads the upstream's 401 WWW-Authenticate header.
//   - Discover follows it to the RFC 9728 protected-resource metadata and the
//     RFC 8414 or OpenID Connect metadata of the authorization server, with
//     the specification's ordered fallbacks, and returns a Server.
//   - ChooseIdentity picks the client identity in the specification's order:
//     a pre-registered client, a Client ID Metadata Document (the document is
//     built by MetadataDocument; the caller serves it), or RFC 7591 dynamic
//     registration (Register).
//   - A Flow runs the authorization-code grant with PKCE S256, state and the
//     RFC 8707 resource: Start gives the link and the Pending record the
//     caller keeps, Finish checks the callback (state, RFC 9207 iss, the
//     server's error) and exchanges the code, Refresh renews the tokens
//     (noting a rotated refresh token) and Revoke revokes them (RFC 7009).
//
// The package keeps nothing: where the Pending record, the registration and
// the tokens live, and for how long, is the caller's. It logs nothing either,
// and no error it returns contains a token, a code, a verifier or a client
// secret: the authorization server's own error text is scrubbed of them
// before it is passed on, since a server may echo what it was sent.
//
// It imports the standard library and golang.org/x/oauth2 only; x/oauth2
// does the code exchange, the PKCE values and the refresh.
//
// # Why not go-sdk's oauthex
//
// go-sdk (v1.8.0, already a dependency) has oauthex, whose
// GetProtectedResourceMetadata, GetAuthServerMeta and RegisterClient fetch
// and check one metadata document or register a client. They were tried in
// place of discover.go (353 lines, 248 of code) and Register (client.go, 77
// lines of code) for issue 32, and not taken, for what this package's tests
// hold and its callers rely on:
//
//   - oauthex fetches one URL each; the specification's ordered fallbacks
//     (the announced URL, then the path-inserted and root well-known URLs;
//     RFC 8414 then OpenID Connect, with path insertion) stay ours, about
//     half of discover.go, so the saving is getJSON and the two metadata
//     structs: some 60 lines.
//   - It returns untyped errors by design, and nil, nil for any 4xx, where
//     the callers and tests tell ErrResourceMismatch, ErrIssuerMismatch,
//     ErrNoPKCE, ErrNoAuthorizationServer, ErrNoResourceMetadata and
//     ErrInsecureURL apart with errors.Is (discover_test.go's table, 17
//     rows): mapping its strings back would cost more than it saves.
//   - It refuses private and reserved addresses (10.0.0.0/8 and the like)
//     for metadata and endpoints, and dials through a transport that checks
//     them, so an authorization server inside the gateway's own network,
//     which deployments have, would stop working; ours allows https anywhere
//     and plain http on loopback only (urls.go).
//   - Its resource check is string equality, so metadata naming the origin
//     for an endpoint at /mcp fails; ours accepts the origin or a parent
//     path on a segment boundary (resourceCovers). Its PKCE check accepts
//     any method; ours wants S256 (the "S256 missing" row).
//   - RegisterClient puts the whole response body in an error when it cannot
//     decode a successful one: a body that holds the client secret. This
//     package's errors never carry a secret.
package upstreamauth

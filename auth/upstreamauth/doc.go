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
package upstreamauth

package gateway

import "context"

// Endpoints (issue 15): every configured endpoint is served at /mcp/<name>, with its legacy twin at
// /mcp/<name>/sse and /mcp/<name>/message(s), exactly as /mcp is; the request's context carries the endpoint's
// name, so that the session it starts sees only the endpoint's part of the catalog, and a session (or a legacy
// connection) opened on one endpoint is not found on another.

// endpointKey carries the endpoint of a request in its context.
type endpointKey struct{}

// WithEndpoint returns ctx for requests of the named endpoint ("" for the whole catalog): the stdio front end
// serves one endpoint this way, and Options.Identify reads it with EndpointFrom to apply the endpoint's policy.
func WithEndpoint(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, endpointKey{}, name)
}

// EndpointFrom returns the endpoint a request's context is for ("" for the whole catalog).
func EndpointFrom(ctx context.Context) string {
	name, _ := ctx.Value(endpointKey{}).(string)
	return name
}

// messagePath is where a legacy connection opened on the request's endpoint posts its messages.
func messagePath(ctx context.Context) string {
	if name := EndpointFrom(ctx); name != "" {
		return "/mcp/" + name + "/message"
	}
	return "/message"
}

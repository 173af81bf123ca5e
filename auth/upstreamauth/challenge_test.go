package upstreamauth

import (
	"reflect"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   Challenge
		found  bool
	}{
		{
			name:   "the specification's example",
			header: `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`,
			want:   Challenge{ResourceMetadata: "https://mcp.example.com/.well-known/oauth-protected-resource", Scopes: []string{"files:read"}},
			found:  true,
		},
		{
			name:   "insufficient scope, several scopes",
			header: `Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://m/x", error_description="Additional file write permission required"`,
			want: Challenge{ResourceMetadata: "https://m/x", Scopes: []string{"files:read", "files:write", "user:profile"},
				Error: "insufficient_scope", ErrorDescription: "Additional file write permission required"},
			found: true,
		},
		{
			name:   "token values, no quotes",
			header: `Bearer error=invalid_token, resource_metadata=https://m/.well-known/oauth-protected-resource/mcp`,
			want:   Challenge{Error: "invalid_token", ResourceMetadata: "https://m/.well-known/oauth-protected-resource/mcp"},
			found:  true,
		},
		{
			name:   "case-insensitive scheme and names",
			header: `bearer Resource_Metadata="https://m/r", SCOPE="a"`,
			want:   Challenge{ResourceMetadata: "https://m/r", Scopes: []string{"a"}},
			found:  true,
		},
		{
			name:   "after another challenge",
			header: `Basic realm="upstream, with a comma", Bearer resource_metadata="https://m/r"`,
			want:   Challenge{ResourceMetadata: "https://m/r"},
			found:  true,
		},
		{
			name:   "before another challenge, whose parameters are not Bearer's",
			header: `Bearer scope="a b", DPoP algs="ES256", error="use_dpop_nonce"`,
			want:   Challenge{Scopes: []string{"a", "b"}, DPoP: true},
			found:  true,
		},
		{
			name:   "after a token68 challenge",
			header: `Negotiate YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer error="invalid_token"`,
			want:   Challenge{Error: "invalid_token"},
			found:  true,
		},
		{
			name:   "escapes and commas in quoted strings",
			header: `Bearer error_description="say \"no\", twice\\", scope="x"`,
			want:   Challenge{ErrorDescription: `say "no", twice\`, Scopes: []string{"x"}},
			found:  true,
		},
		{
			name:   "spaces around = and empty list elements",
			header: ` , Bearer ,, scope = "a" ,resource_metadata= "https://m/r" ,`,
			want:   Challenge{Scopes: []string{"a"}, ResourceMetadata: "https://m/r"},
			found:  true,
		},
		{
			name:   "a repeated parameter keeps its first value",
			header: `Bearer resource_metadata="https://m/first", resource_metadata="https://evil/second"`,
			want:   Challenge{ResourceMetadata: "https://m/first"},
			found:  true,
		},
		{
			name:   "the first Bearer challenge wins",
			header: `Bearer scope="a", Bearer scope="b", resource_metadata="https://m/r"`,
			want:   Challenge{Scopes: []string{"a"}},
			found:  true,
		},
		{
			name:   "an unterminated quoted string runs to the end",
			header: `Bearer resource_metadata="https://m/r", scope="a b`,
			want:   Challenge{ResourceMetadata: "https://m/r", Scopes: []string{"a", "b"}},
			found:  true,
		},
		{
			name:   "Bearer alone",
			header: `Bearer`,
			found:  true,
		},
		{
			name:   "stray characters",
			header: `="x", "y", Bearer scope="a"`,
			want:   Challenge{Scopes: []string{"a"}},
			found:  true,
		},
		{
			name:   "DPoP challenge (RFC 9449 §7.1)",
			header: `Basic realm="x", DPoP error="use_dpop_nonce", algs="ES256", resource_metadata="https://m/r"`,
			want:   Challenge{ResourceMetadata: "https://m/r", Error: "use_dpop_nonce", DPoP: true},
			found:  true,
		},
		{
			name:   "Bearer preferred to DPoP",
			header: `DPoP algs="ES256", scope="x", Bearer scope="read"`,
			want:   Challenge{Scopes: []string{"read"}, DPoP: true},
			found:  true,
		},
		{name: "no Bearer or DPoP challenge", header: `Basic realm="x", Negotiate abc==`},
		{name: "a parameter named bearer is not a scheme", header: `Basic bearer="x"`},
		{name: "empty", header: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := ParseChallenge(tt.header)
			if found != tt.found || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseChallenge(%s)\n got %+v, %v\nwant %+v, %v", tt.header, got, found, tt.want, tt.found)
			}
		})
	}
}

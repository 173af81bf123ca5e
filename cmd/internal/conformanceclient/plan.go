package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// upstreamAuth is the kind of upstream credential a scenario calls for, among those the gateway's configuration
// offers today (docs/auth.md: headers, auth.clientCredentials, auth.tokenExchange, type: user-oauth).
type upstreamAuth int

const (
	authNone              upstreamAuth = iota // the scenario's server wants no credentials
	authUserOAuth                             // each person's own grant, connected in-band (type: user-oauth)
	authClientCredentials                     // the gateway's own client-credentials token (auth.clientCredentials)
	authIDJAG                                 // the person's ID token exchanged for an ID-JAG (type: id-jag)
	authWorkload                              // the gateway's workload token in the JWT bearer grant (type: workload-identity)
	authUnsupported                           // nothing in the configuration can express it: see plan.unsupported
)

// unsupportedScenarios are the scenarios whose credential the gateway's configuration cannot express yet, with
// what is missing. The harness starts no gateway for them (there is nothing to configure), so they fail.
var unsupportedScenarios = map[string]string{}

// plan is how the harness runs one scenario: which upstream credential the gateway gets and with which client.
type plan struct {
	scenario string
	auth     upstreamAuth
	// clientID and clientSecret come from MCP_CONFORMANCE_CONTEXT: a pre-registered client (user-oauth) or the
	// gateway's own client (client credentials). Empty when the scenario gives none.
	clientID, clientSecret string
	// unsupported says why no gateway can be configured (auth == authUnsupported).
	unsupported string
	// idToken and idpTokenURL are the person's ID token at the scenario's identity provider and where it is
	// exchanged (authIDJAG); idToken is the workload's token for authWorkload.
	idToken, idpTokenURL string
	// privateKey is the client's PEM private key (private_key_jwt client credentials).
	privateKey string
}

// scenarioContext is MCP_CONFORMANCE_CONTEXT: a JSON object with the scenario's name and the credentials it
// hands to the client, plus per-scenario data (toolCalls of http-custom-headers).
type scenarioContext map[string]any

// parseContext reads MCP_CONFORMANCE_CONTEXT; empty means no context.
func parseContext(raw string) (scenarioContext, error) {
	if strings.TrimSpace(raw) == "" {
		return scenarioContext{}, nil
	}
	var c scenarioContext
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	return c, nil
}

func (c scenarioContext) str(key string) string {
	s, _ := c[key].(string)
	return s
}

// planFor decides how the gateway is configured for a scenario.
func planFor(scenario string, c scenarioContext) plan {
	p := plan{scenario: scenario, clientID: c.str("client_id"), clientSecret: c.str("client_secret")}
	switch {
	case unsupportedScenarios[scenario] != "":
		p.auth, p.unsupported = authUnsupported, unsupportedScenarios[scenario]
	case scenario == "auth/client-credentials-basic":
		p.auth = authClientCredentials
	case scenario == "auth/client-credentials-jwt":
		// private_key_jwt: the context's PEM key takes the place of a secret.
		p.auth, p.privateKey = authClientCredentials, c.str("private_key_pem")
	case scenario == "auth/wif-jwt-bearer":
		// The workload's token as the platform would project it (valid_jwt; the scenario's other two are for
		// clients that test their own error handling).
		p.auth, p.idToken = authWorkload, c.str("valid_jwt")
	case scenario == "auth/enterprise-managed-authorization":
		p.auth, p.idToken, p.idpTokenURL = authIDJAG, c.str("idp_id_token"), c.str("idp_token_endpoint")
	case strings.HasPrefix(scenario, "auth/"):
		// Every other auth scenario (metadata discovery, CIMD, DCR, pre-registration, scopes, token endpoint
		// authentication, iss, offline access, migration, DPoP) is a person's authorization-code grant: the
		// gateway's user-oauth. A secret without an id is no client (the gateway would refuse the config).
		p.auth = authUserOAuth
		if p.clientID == "" {
			p.clientSecret = ""
		}
	default:
		p.auth = authNone
	}
	return p
}

// gatewaySetup is what the harness knows when it writes the gateway's configuration.
type gatewaySetup struct {
	listen      string // host:port the gateway serves on
	upstreamURL string // the scenario's MCP server
	issuer      string // the harness's identity provider (user-oauth only)
	tokenURL    string // the upstream's token endpoint (client credentials and ID-JAG)
	asIssuer    string // the upstream's authorization server (ID-JAG only)
	idTokenFile string // the file the person's ID token (ID-JAG) or the workload's token is in
	keyFile     string // the file the client's private key is in (private_key_jwt)
	tokenKeys   string // auth.tokenKeys (user-oauth only)
	// browserSecret is the gateway's sign-in client secret at the issuer (user-oauth only).
	browserSecret string
}

// Fixed names the harness and its identity provider share.
const (
	upstreamName       = "conformance"
	browserClientID    = "switchboard-web"
	browserSecretEnv   = "CONFORMANCE_BROWSER_SECRET"     // the gateway reads its sign-in secret from here
	upstreamSecretEnv  = "CONFORMANCE_UPSTREAM_SECRET"    // and the upstream client's secret from here
	tokenKeysEnv       = "SWITCHBOARD_TOKEN_KEYS"         // and its token keys from here
	conformancePerson  = "conformance-person"             // the subject the harness signs in as
	gatewayMCPPath     = "/mcp"                           // the gateway's MCP endpoint
	conformanceAuthTag = "generated by conformanceclient" // first line of every config
)

// config is the gateway's YAML for the plan. Secrets are ${VAR} references, expanded by the gateway from its
// environment (env), so the file on disk holds none.
func (p plan) config(s gatewaySetup) (yaml string, env []string, err error) {
	if p.auth == authUnsupported {
		return "", nil, fmt.Errorf("scenario %s: the gateway cannot be configured for it: %s", p.scenario, p.unsupported)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s for %s\nlisten: %q\n", conformanceAuthTag, p.scenario, s.listen)
	if p.auth == authUserOAuth {
		public := "http://" + s.listen
		fmt.Fprintf(&b, "publicURL: %q\nauth:\n  issuer: %q\n  audience: %q\n", public, s.issuer, public+gatewayMCPPath)
		fmt.Fprintf(&b, "  browser:\n    clientId: %q\n    clientSecret: \"${%s}\"\n", browserClientID, browserSecretEnv)
		fmt.Fprintf(&b, "  tokenKeys: \"${%s}\"\n", tokenKeysEnv)
		env = append(env, tokenKeysEnv+"="+s.tokenKeys, browserSecretEnv+"="+s.browserSecret)
	}
	fmt.Fprintf(&b, "upstreams:\n  - name: %s\n    url: %q\n    prefix: \"\"\n    session: per-client\n    protocol: auto\n",
		upstreamName, s.upstreamURL)
	switch p.auth {
	case authUserOAuth:
		b.WriteString("    auth:\n      type: user-oauth\n")
		if p.clientID != "" {
			fmt.Fprintf(&b, "      clientId: %q\n", p.clientID)
		}
		if p.clientSecret != "" {
			fmt.Fprintf(&b, "      clientSecret: \"${%s}\"\n", upstreamSecretEnv)
			env = append(env, upstreamSecretEnv+"="+p.clientSecret)
		}
	case authClientCredentials:
		if p.privateKey != "" {
			if s.tokenURL == "" || s.asIssuer == "" || s.keyFile == "" || p.clientID == "" {
				return "", nil, fmt.Errorf("scenario %s: private_key_jwt needs the token URL, the issuer, the key file and client_id "+
					"(got token URL %q, issuer %q, client_id %q)", p.scenario, s.tokenURL, s.asIssuer, p.clientID)
			}
			fmt.Fprintf(&b, "    auth:\n      clientCredentials:\n        tokenURL: %q\n        clientId: %q\n", s.tokenURL, p.clientID)
			fmt.Fprintf(&b, "        privateKeyFile: %q\n        assertionAudience: %q\n", s.keyFile, s.asIssuer)
			break
		}
		if s.tokenURL == "" || p.clientID == "" || p.clientSecret == "" {
			return "", nil, fmt.Errorf("scenario %s: client credentials need a token URL, client_id and client_secret "+
				"(got token URL %q, client_id %q)", p.scenario, s.tokenURL, p.clientID)
		}
		fmt.Fprintf(&b, "    auth:\n      clientCredentials:\n        tokenURL: %q\n        clientId: %q\n", s.tokenURL, p.clientID)
		fmt.Fprintf(&b, "        clientSecret: \"${%s}\"\n", upstreamSecretEnv)
		env = append(env, upstreamSecretEnv+"="+p.clientSecret)
	case authIDJAG:
		// The gateway serves one person without sign-in: their ID token is in a file, as an SSO helper keeps it.
		if s.tokenURL == "" || s.asIssuer == "" || p.idpTokenURL == "" || s.idTokenFile == "" || p.clientID == "" || p.clientSecret == "" {
			return "", nil, fmt.Errorf("scenario %s: id-jag needs the IdP's token URL, the ID token, the authorization server's "+
				"issuer and token URL, client_id and client_secret (got IdP %q, AS %q, token URL %q, client_id %q)",
				p.scenario, p.idpTokenURL, s.asIssuer, s.tokenURL, p.clientID)
		}
		fmt.Fprintf(&b, "    auth:\n      type: id-jag\n      idp: {tokenURL: %q, idTokenFile: %q}\n", p.idpTokenURL, s.idTokenFile)
		fmt.Fprintf(&b, "      issuer: %q\n      tokenURL: %q\n      clientId: %q\n", s.asIssuer, s.tokenURL, p.clientID)
		fmt.Fprintf(&b, "      clientSecret: \"${%s}\"\n", upstreamSecretEnv)
		env = append(env, upstreamSecretEnv+"="+p.clientSecret)
	case authWorkload:
		if s.tokenURL == "" || s.idTokenFile == "" {
			return "", nil, fmt.Errorf("scenario %s: workload identity needs the token URL and the token file (got %q, %q)",
				p.scenario, s.tokenURL, s.idTokenFile)
		}
		fmt.Fprintf(&b, "    auth:\n      type: workload-identity\n      tokenFile: %q\n      tokenURL: %q\n", s.idTokenFile, s.tokenURL)
		if p.clientID != "" {
			fmt.Fprintf(&b, "      clientId: %q\n", p.clientID)
		}
	}
	return b.String(), env, nil
}

package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// codeAS is an OAuth 2.1 authorization server inside the test, on top of testAS's
// JWKS and signing key: RFC 8414 metadata, RFC 7591 dynamic client registration,
// the authorization endpoint (it authorizes user "carol" at once, no login page),
// and the token endpoint, which checks the PKCE S256 verifier and the RFC 8707
// resource before it mints an access token for that resource.
type codeAS struct {
	*testAS
	resource string

	mu      sync.Mutex
	clients map[string][]string // client_id -> redirect URIs
	codes   map[string]grant    // one-time authorization codes
	consent []string            // the scopes the user agrees to; a code grants those asked for among them

	metadata, registered, authorized, exchanged atomic.Int32
}

type grant struct {
	clientID, redirect, challenge, resource, scope string
}

// newCodeAS is a codeAS whose user agrees to the scopes consent.
func newCodeAS(t *testing.T, resource string, consent ...string) *codeAS {
	as := &codeAS{testAS: newTestAS(t), resource: resource, clients: map[string][]string{}, codes: map[string]grant{}, consent: consent}
	as.mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.serveMetadata)
	as.mux.HandleFunc("POST /register", as.register)
	as.mux.HandleFunc("GET /authorize", as.authorize)
	as.mux.HandleFunc("POST /token", as.token(t))
	return as
}

func (as *codeAS) serveMetadata(w http.ResponseWriter, r *http.Request) {
	as.metadata.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"issuer": as.issuer, "authorization_endpoint": as.issuer + "/authorize", "token_endpoint": as.issuer + "/token",
		"registration_endpoint": as.issuer + "/register", "jwks_uri": as.issuer + "/jwks",
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported": []string{"mcp", "tools:json"}, "authorization_response_iss_parameter_supported": true,
	})
}

func (as *codeAS) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
		return
	}
	id := rand.Text()
	as.mu.Lock()
	as.clients[id] = md.RedirectURIs
	as.mu.Unlock()
	as.registered.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code"}})
}

// authorize checks the request and redirects with a code (a user who says yes).
func (as *codeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	redirects, known := as.clients[q.Get("client_id")]
	as.mu.Unlock()
	switch {
	case !known || !slices.Contains(redirects, q.Get("redirect_uri")):
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "response_type code with a PKCE S256 challenge required", http.StatusBadRequest)
		return
	case q.Get("resource") != as.resource:
		http.Error(w, "resource "+q.Get("resource")+" is not "+as.resource, http.StatusBadRequest)
		return
	}
	code := rand.Text()
	as.mu.Lock()
	var scopes []string
	for _, sc := range strings.Fields(q.Get("scope")) {
		if slices.Contains(as.consent, sc) {
			scopes = append(scopes, sc)
		}
	}
	as.codes[code] = grant{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), scope: strings.Join(scopes, " ")}
	as.mu.Unlock()
	as.authorized.Add(1)
	to, _ := url.Parse(q.Get("redirect_uri"))
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	v.Set("iss", as.issuer)
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// token exchanges a code, once, for an access token: the verifier must hash to the
// code's S256 challenge and the resource must be the one authorized.
func (as *codeAS) token(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fail := func(e string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q}`, e)
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "authorization_code" {
			fail("unsupported_grant_type")
			return
		}
		as.mu.Lock()
		g, ok := as.codes[r.PostForm.Get("code")]
		delete(as.codes, r.PostForm.Get("code"))
		as.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case !ok || g.clientID != r.PostForm.Get("client_id") || g.redirect != r.PostForm.Get("redirect_uri"):
			fail("invalid_grant")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			fail("invalid_grant") // PKCE: the verifier does not match the challenge
			return
		case r.PostForm.Get("resource") != g.resource:
			fail("invalid_target")
			return
		}
		c := as.user("carol", g.scope)
		c.Audience = jwt.Audience{g.resource}
		tok := as.mint(t, c, jose.RS256, nil, "k1")
		as.exchanged.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": g.scope})
	}
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// agree makes the user agree to scopes from now on.
func (as *codeAS) agree(scopes ...string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.consent = scopes
}

// countingTransport counts the requests for the RFC 9728 document (either form)
// and notes the paths asked for.
type countingTransport struct {
	mu    sync.Mutex
	paths []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
		c.mu.Lock()
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) metadataFetches() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.paths)
}

// TestOAuthEndToEnd: go-sdk's own OAuth client (auth.AuthorizationCodeHandler)
// does the whole flow against the binary: the 401 names the RFC 9728 document, the
// client fetches it and it names the authorization server, RFC 8414 metadata,
// dynamic client registration, the authorization code with PKCE S256 and the RFC
// 8707 resource, the token exchange; then tools/list with the token it got. The
// user first agrees to the scope "mcp" only, so the token grants no tool: a
// tools/call of toolbox_json_format gets the 403 scope challenge, and the client
// steps up (MCP's scope challenge handling: the document again, a new
// authorization for "mcp tools:json") and sends the call again, which is served.
func TestOAuthEndToEnd(t *testing.T) {
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	as := newCodeAS(t, resource, "mcp")
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "oauth"
issuer = %q
resource = %q
jwks_url = %q
required_scopes = ["mcp"]

[[server.auth.grants]]
scope = "tools:json"
tools = ["toolbox_json_format"]

`, as.issuer, resource, as.issuer+"/jwks")+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTPOn(t, cfg, addr)
	if url != resource {
		t.Fatalf("the server serves %s, want %s", url, resource)
	}

	const redirect = "http://127.0.0.1:1/callback" // never reached: the fetcher reads the redirect
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	counting := &countingTransport{}
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "e2e", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none"}},
		RedirectURL: redirect,
		Client:      &http.Client{Transport: counting},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			resp, err := noFollow.Get(args.URL)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			loc, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("authorize: %s, no redirect: %w", resp.Status, err)
			}
			q := loc.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("connect through the OAuth flow: %v", err)
	}
	defer cs.Close()
	if as.metadata.Load() == 0 || as.registered.Load() != 1 || as.authorized.Load() != 1 || as.exchanged.Load() != 1 {
		t.Errorf("flow: metadata %d, registered %d, authorized %d, exchanged %d; want the AS metadata read and one of each",
			as.metadata.Load(), as.registered.Load(), as.authorized.Load(), as.exchanged.Load())
	}
	// The client found the authorization server through the RFC 9728 document
	// the 401 named (its path form): nothing else names it.
	if got := counting.metadataFetches(); len(got) != 1 || got[0] != "/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("RFC 9728 document fetches = %q, want one of /.well-known/oauth-protected-resource/mcp", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 0 {
		t.Fatalf("tools/list with scope mcp = %v, %v, want no tool (none is granted to mcp)", tools, err)
	}

	// Step-up: the user now agrees to tools:json too.
	as.agree("mcp", "tools:json")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toolbox_json_format", Arguments: map[string]any{"json": `{"a":1}`}})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"a"`) {
		t.Fatalf("tools/call after the step-up = %+v, %v, want the formatted document", res, err)
	}
	if as.authorized.Load() != 2 || as.exchanged.Load() != 2 {
		t.Errorf("step-up: authorized %d, exchanged %d; want a second authorization and token", as.authorized.Load(), as.exchanged.Load())
	}
	if got := counting.metadataFetches(); len(got) != 2 {
		t.Errorf("RFC 9728 document fetches after the step-up = %q, want 2 (the 403 names it too)", got)
	}
	tools, err = cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "toolbox_json_format" {
		t.Fatalf("tools/list after the step-up = %v, %v, want the granted toolbox_json_format alone", tools, err)
	}
	// The token is the identity: the client's token source holds what the AS
	// minted, for carol, for this resource, with the scope it stepped up to.
	ts, err := handler.TokenSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.ParseSigned(tok.AccessToken, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var c claims
	if err := parsed.Claims(as.rsa.Public(), &c); err != nil || c.Subject != "carol" || !slices.Equal([]string(c.Audience), []string{resource}) ||
		!slices.Equal(strings.Fields(c.Scope), []string{"mcp", "tools:json"}) {
		t.Errorf("the client's token: %+v, %v; want carol's for %s with scope \"mcp tools:json\"", c, err, resource)
	}
}

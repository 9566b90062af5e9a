package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Modes.
const (
	ModeOAuth   = "oauth"
	ModeAPIKeys = "api_keys"
)

// DefaultClockSkew is how far a token's exp, nbf and iat may be off this server's
// clock when Options.ClockSkew is 0: clocks of hosts kept by NTP agree far better.
const DefaultClockSkew = 30 * time.Second

// DefaultAlgorithms are the signature algorithms accepted when Options.Algorithms
// is nil.
var DefaultAlgorithms = []string{"RS256", "ES256", "EdDSA"}

// asymmetric are the algorithms that may be allowed at all: never "none", never HMAC
// (an HMAC key is a shared secret, and a verifier that took one could be fed a
// token "signed" with the issuer's public key).
var asymmetric = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384,
	jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// Options configures an Authenticator (config.Auth, decoded).
type Options struct {
	Mode     string // ModeOAuth or ModeAPIKeys
	Resource string // this server's resource URI: the tokens' audience; "" for no RFC 9728 document (api_keys only)
	Issuer   string // the token issuer (oauth)
	JWKSURL  string // where the issuer's keys are fetched (oauth; or JWKSFile, or introspection alone)
	JWKSFile string // a local JWKS (oauth; or JWKSURL)
	// IntrospectionURL is the issuer's RFC 7662 token introspection endpoint
	// (oauth): a token that is not a JWT this server can check (no JWKS, or not a
	// JWS in Algorithms) is checked there. "" means JWTs only.
	IntrospectionURL string
	// IntrospectionClientID and the secret in IntrospectionSecretFile (read here,
	// surrounding blanks trimmed) authenticate this server to the endpoint.
	IntrospectionClientID   string
	IntrospectionSecretFile string
	// IntrospectionCache is how long an active token's answer is reused, at most
	// until its exp. 0 means DefaultIntrospectionCache.
	IntrospectionCache time.Duration
	// JWKSRefresh is how often JWKSURL is refetched. 0 means DefaultJWKSRefresh.
	JWKSRefresh time.Duration
	// Algorithms allowed; nil means DefaultAlgorithms. Others than asymmetric are
	// an error.
	Algorithms []string
	// ClockSkew is how far exp, nbf and iat may be off. 0 means DefaultClockSkew.
	ClockSkew time.Duration
	// RequiredScopes must all be in every token (403 otherwise). Nil means none.
	RequiredScopes []string
	// RateLimit is how many requests per second each identity may make on
	// average; more get 429 with Retry-After. 0 means no limit.
	RateLimit float64
	// RateBurst is how many requests an identity may make at once. 0 means twice
	// RateLimit, at least 1.
	RateBurst int
	Keys      []Key   // api_keys
	Grants    []Grant // nil means no tool for anyone
	// HTTPClient fetches the JWKS; nil means a client with http.DefaultTransport
	// and a 10s timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger // nil discards
	// OnRefuse, if set, hears of every request Wrap refuses (metrics, the audit
	// trail). It must not block. Nil means no one hears.
	OnRefuse func(Refusal)
}

// Reasons Wrap refuses a request, as Options.OnRefuse hears them.
const (
	RefuseMissingToken = "missing_token"      // no bearer token: 401
	RefuseInvalidToken = "invalid_token"      // the token did not verify: 401
	RefuseScope        = "insufficient_scope" // a required scope is missing: 403
	RefuseRateLimit    = "rate_limit"         // the identity's rate limit: 429
)

// Refusal is a request Wrap refused, as Options.OnRefuse hears of it. It holds
// nothing of the token.
type Refusal struct {
	Reason string // RefuseMissingToken, RefuseInvalidToken, RefuseScope or RefuseRateLimit
	Status int    // the HTTP status answered: 401, 403 or 429
	// Identity is the verified identity ("oauth:" issuer "#" sub, "key:" name)
	// for RefuseScope and RefuseRateLimit; "" when there was no valid token.
	Identity   string
	RemoteAddr string // the client's address, as http.Request.RemoteAddr
}

// Key is one API key: its holder's name (the identity), the SHA-256 of the key and
// its scopes.
type Key struct {
	Name   string
	SHA256 string // hex
	Scopes []string
}

// Grant gives Tools (names, a trailing "*" matching any suffix) to a scope or to
// the API key named Key.
type Grant struct {
	Scope string
	Key   string
	Tools []string
}

// Authenticator verifies requests and answers grants. Safe for concurrent use.
type Authenticator struct {
	mode     string
	resource string
	issuer   string
	algs     []jose.SignatureAlgorithm
	skew     time.Duration
	required []string
	keys     *keySet       // nil: no JWKS (introspection only)
	intro    *introspector // nil: no introspection
	apiKeys  []apiKey
	grants   []Grant
	limit    *limiter // nil: no limit
	rate     float64  // Options.RateLimit
	now      func() time.Time
	onRefuse func(Refusal)
}

type apiKey struct {
	name   string
	sum    []byte
	scopes []string
}

// New makes an Authenticator. A JWKS file is read here; a JWKS URL is fetched on
// the first token.
func New(opts Options) (*Authenticator, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Authenticator{mode: opts.Mode, resource: opts.Resource, issuer: opts.Issuer, skew: opts.ClockSkew,
		required: opts.RequiredScopes, grants: opts.Grants, now: time.Now,
		limit: newLimiter(opts.RateLimit, opts.RateBurst), rate: opts.RateLimit, onRefuse: opts.OnRefuse}
	if a.onRefuse == nil {
		a.onRefuse = func(Refusal) {}
	}
	if a.skew == 0 {
		a.skew = DefaultClockSkew
	}
	switch opts.Mode {
	case ModeOAuth:
		names := opts.Algorithms
		if names == nil {
			names = DefaultAlgorithms
		}
		for _, n := range names {
			i := slices.IndexFunc(asymmetric, func(a jose.SignatureAlgorithm) bool { return string(a) == n })
			if i < 0 {
				return nil, fmt.Errorf("authn: algorithm %q is not allowed (never none, never HMAC)", n)
			}
			a.algs = append(a.algs, asymmetric[i])
		}
		if opts.Issuer == "" || opts.Resource == "" {
			return nil, errors.New("authn: oauth needs an issuer and a resource")
		}
		client := opts.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: fetchTimeout}
		}
		switch {
		case opts.JWKSFile != "":
			ks, err := loadKeySet(opts.JWKSFile)
			if err != nil {
				return nil, fmt.Errorf("authn: %w", err)
			}
			a.keys = ks
		case opts.JWKSURL != "":
			refresh := opts.JWKSRefresh
			if refresh == 0 {
				refresh = DefaultJWKSRefresh
			}
			a.keys = &keySet{url: opts.JWKSURL, refresh: refresh, client: client, logger: logger}
		case opts.IntrospectionURL == "":
			return nil, errors.New("authn: oauth needs a JWKS URL or file, or an introspection URL")
		}
		if opts.IntrospectionURL != "" {
			secret, err := os.ReadFile(opts.IntrospectionSecretFile)
			if err != nil {
				return nil, fmt.Errorf("authn: introspection secret: %w", err)
			}
			keep := opts.IntrospectionCache
			if keep == 0 {
				keep = DefaultIntrospectionCache
			}
			a.intro = &introspector{url: opts.IntrospectionURL, clientID: opts.IntrospectionClientID,
				secret: strings.TrimSpace(string(secret)), client: client, keep: keep, issuer: opts.Issuer,
				resource: opts.Resource, skew: a.skew, logger: logger, slots: make(chan struct{}, maxIntrospecting),
				answers: map[[sha256.Size]byte]introspected{}}
		}
	case ModeAPIKeys:
		for _, k := range opts.Keys {
			sum, err := hex.DecodeString(k.SHA256)
			if err != nil || len(sum) != sha256.Size {
				return nil, fmt.Errorf("authn: key %q: sha256 is not 64 hex digits", k.Name)
			}
			a.apiKeys = append(a.apiKeys, apiKey{name: k.Name, sum: sum, scopes: k.Scopes})
		}
	default:
		return nil, fmt.Errorf("authn: unknown mode %q", opts.Mode)
	}
	return a, nil
}

// errInvalid wraps why a token is refused; it satisfies errors.Is(err,
// auth.ErrInvalidToken).
func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", auth.ErrInvalidToken, fmt.Sprintf(format, args...))
}

// Verify turns a bearer token into an identity, or an error that satisfies
// errors.Is(err, auth.ErrInvalidToken). The TokenInfo's UserID is the identity:
// "oauth:" + issuer + "#" + sub, or "key:" + the API key's name.
func (a *Authenticator) Verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	if a.mode == ModeAPIKeys {
		return a.verifyKey(token)
	}
	if a.intro == nil {
		return a.verifyJWT(ctx, token, nil)
	}
	// A JWS this server can check is checked here, never sent on; any other
	// token goes to the issuer's introspection endpoint.
	if a.keys != nil {
		if tok, err := jwt.ParseSigned(token, a.algs); err == nil {
			return a.verifyJWT(ctx, token, tok)
		}
	}
	return a.intro.verify(ctx, token, a.now())
}

func (a *Authenticator) verifyKey(token string) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	var found *apiKey
	for i := range a.apiKeys { // every key compared, found or not
		if subtle.ConstantTimeCompare(sum[:], a.apiKeys[i].sum) == 1 {
			found = &a.apiKeys[i]
		}
	}
	if found == nil {
		return nil, errInvalid("unknown API key")
	}
	return &auth.TokenInfo{UserID: "key:" + found.name, Scopes: found.scopes}, nil
}

// accessClaims are the claims read beyond the registered ones: the scopes, as
// "scope" (RFC 9068, space separated) or "scp" (a list).
type accessClaims struct {
	Scope string   `json:"scope"`
	Scp   []string `json:"scp"`
}

// verifyJWT checks token, already parsed as tok when not nil.
func (a *Authenticator) verifyJWT(ctx context.Context, token string, tok *jwt.JSONWebToken) (*auth.TokenInfo, error) {
	if tok == nil {
		var err error
		if tok, err = jwt.ParseSigned(token, a.algs); err != nil {
			return nil, errInvalid("malformed token or algorithm not allowed")
		}
	}
	if len(tok.Headers) != 1 {
		return nil, errInvalid("token must have one signature")
	}
	h := tok.Headers[0]
	now := a.now()
	key, ok := a.keys.key(ctx, h.KeyID, now)
	if !ok {
		return nil, errInvalid("unknown signing key %q", h.KeyID)
	}
	if key.Algorithm != "" && key.Algorithm != h.Algorithm {
		return nil, errInvalid("key %q is for %s, not %s", h.KeyID, key.Algorithm, h.Algorithm)
	}
	var reg jwt.Claims
	var ac accessClaims
	if err := tok.Claims(key.Key, &reg, &ac); err != nil {
		return nil, errInvalid("bad signature")
	}
	if err := reg.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, AnyAudience: jwt.Audience{a.resource}, Time: now}, a.skew); err != nil {
		return nil, errInvalid("%v", err)
	}
	if reg.Expiry == nil {
		return nil, errInvalid("token has no exp")
	}
	if reg.Subject == "" {
		return nil, errInvalid("token has no sub")
	}
	scopes := ac.Scp
	if ac.Scope != "" {
		scopes = strings.Fields(ac.Scope)
	}
	return &auth.TokenInfo{UserID: "oauth:" + a.issuer + "#" + reg.Subject, Scopes: scopes,
		Expiration: reg.Expiry.Time()}, nil
}

// Allowed reports whether the identity ti may see and call the tool named tool: a
// grant for one of its scopes, or for its API key, matches the name.
func (a *Authenticator) Allowed(ti *auth.TokenInfo, tool string) bool {
	if ti == nil {
		return false
	}
	for _, g := range a.grants {
		switch {
		case g.Scope != "" && slices.Contains(ti.Scopes, g.Scope):
		case g.Key != "" && ti.UserID == "key:"+g.Key:
		default:
			continue
		}
		if g.match(tool) > 0 {
			return true
		}
	}
	return false
}

// match says how closely one of g's tool names matches tool: 0 for none, more for a
// longer prefix before a "*", most for the name itself.
func (g Grant) match(tool string) int {
	best := 0
	for _, p := range g.Tools {
		switch {
		case p == tool:
			return len(tool) + 2
		case strings.HasSuffix(p, "*") && strings.HasPrefix(tool, p[:len(p)-1]):
			best = max(best, len(p)) // "*" alone: 1
		}
	}
	return best
}

// NotGranted says how to refuse the identity ti a call of tool, which Allowed
// refuses. msg names the tool and what is missing. For an OAuth token, scopes are
// what a token needs for the tool: the required scopes, then the scope of the
// narrowest grant of it (its name before a prefix, a longer prefix before a shorter,
// the first in config order among equals); challenge is the WWW-Authenticate value
// of the HTTP 403 that asks for them (RFC 6750 error="insufficient_scope" with
// scope and resource_metadata: MCP's scope challenge, after which a client may get
// a token with them and try again). Both are empty when no scope grants the tool,
// and for an API key, whose scopes its holder cannot change.
func (a *Authenticator) NotGranted(ti *auth.TokenInfo, tool string) (msg string, scopes []string, challenge string) {
	if ti != nil && a.mode == ModeAPIKeys {
		return fmt.Sprintf("tool %q is not granted to key %q", tool, strings.TrimPrefix(ti.UserID, "key:")), nil, ""
	}
	var scope string
	best := 0
	for _, g := range a.grants {
		if m := g.match(tool); g.Scope != "" && m > best {
			scope, best = g.Scope, m
		}
	}
	if ti == nil || a.mode != ModeOAuth || scope == "" {
		return fmt.Sprintf("tool %q is not granted to this caller, and no scope grants it", tool), nil, ""
	}
	scopes = append(slices.Clone(a.required), scope)
	challenge = a.challenge(`error="insufficient_scope"`, fmt.Sprintf("scope=%q", strings.Join(scopes, " ")),
		fmt.Sprintf("error_description=%q", "tool "+tool+" needs scope "+scope))
	return fmt.Sprintf("tool %q needs scope %q, which this token does not have: ask for a token with scope %q", tool, scope, strings.Join(scopes, " ")),
		scopes, challenge
}

// challenge is a WWW-Authenticate value: Bearer with params, then the RFC 9728
// document's URL as resource_metadata when there is one.
func (a *Authenticator) challenge(params ...string) string {
	if u := MetadataURL(a.resource); u != "" {
		params = append(params, fmt.Sprintf("resource_metadata=%q", u))
	}
	v := "Bearer"
	if len(params) > 0 {
		v += " " + strings.Join(params, ", ")
	}
	return v
}

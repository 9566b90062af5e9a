package authn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// CodeQuota is the JSON-RPC error code of a quota refusal (a server error, as the
// host's other quota refusals).
const CodeQuota = -32000

// WellKnownPath is where RFC 9728 protected resource metadata is served; the
// resource's path is appended for its path form (RFC 9728 section 3.1).
const WellKnownPath = "/.well-known/oauth-protected-resource"

// MetadataURL is the URL of the RFC 9728 document of resource: WellKnownPath
// inserted between its host and its path. "" for "".
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || resource == "" {
		return ""
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + WellKnownPath + path
}

type verifiedKey struct{}

// Wrap guards next: every request needs a valid bearer token (401 otherwise) with
// the required scopes (403), within its identity's rate limit (429 with
// Retry-After), and reaches next with its auth.TokenInfo in the
// context (auth.TokenInfoFromContext; go-sdk puts it in every request's Extra and
// binds sessions to its UserID). The RFC 9728 document is served, without a token,
// at WellKnownPath and its path form when a resource is configured.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	metaURL := MetadataURL(a.resource)
	// go-sdk's wrapper only stores the identity verified below in the context
	// where its handlers read it.
	store := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if ti, ok := ctx.Value(verifiedKey{}).(*auth.TokenInfo); ok {
			return ti, nil
		}
		return nil, errors.New("authn: no verified identity") // cannot happen
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: a.skew})(next)

	challenge := func(w http.ResponseWriter, status int, params ...string) {
		w.Header().Set("WWW-Authenticate", a.challenge(params...))
		http.Error(w, http.StatusText(status), status)
	}
	guard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			a.onRefuse(Refusal{Reason: RefuseMissingToken, Status: http.StatusUnauthorized, RemoteAddr: r.RemoteAddr})
			challenge(w, http.StatusUnauthorized)
			return
		}
		ti, err := a.Verify(r.Context(), token)
		if err != nil {
			a.onRefuse(Refusal{Reason: RefuseInvalidToken, Status: http.StatusUnauthorized, RemoteAddr: r.RemoteAddr})
			desc := strings.ReplaceAll(strings.TrimPrefix(err.Error(), auth.ErrInvalidToken.Error()+": "), `"`, "'")
			challenge(w, http.StatusUnauthorized, `error="invalid_token"`, fmt.Sprintf("error_description=%q", desc))
			return
		}
		for _, s := range a.required {
			if !slices.Contains(ti.Scopes, s) {
				a.onRefuse(Refusal{Reason: RefuseScope, Status: http.StatusForbidden, Identity: ti.UserID, RemoteAddr: r.RemoteAddr})
				challenge(w, http.StatusForbidden, `error="insufficient_scope"`,
					fmt.Sprintf("scope=%q", strings.Join(a.required, " ")))
				return
			}
		}
		if a.limit != nil {
			if ok, wait := a.limit.allow(ti.UserID, a.now()); !ok {
				a.onRefuse(Refusal{Reason: RefuseRateLimit, Status: http.StatusTooManyRequests, Identity: ti.UserID, RemoteAddr: r.RemoteAddr})
				a.refuseRate(w, r, max(1, int(math.Ceil(wait.Seconds()))))
				return
			}
		}
		// The token goes no further than this request's header: strip it so
		// nothing downstream (guests, egress, logs) can read it.
		r = r.Clone(context.WithValue(r.Context(), verifiedKey{}, ti))
		store.ServeHTTP(w, withoutToken(r))
	})
	if metaURL == "" {
		return guard
	}
	// The scopes a client should ask for: those every token needs, then those
	// that grant tools.
	scopes := slices.Clone(a.required)
	for _, g := range a.grants {
		if g.Scope != "" && !slices.Contains(scopes, g.Scope) {
			scopes = append(scopes, g.Scope)
		}
	}
	meta := &oauthex.ProtectedResourceMetadata{Resource: a.resource, ScopesSupported: scopes,
		BearerMethodsSupported: []string{"header"}}
	if a.issuer != "" {
		meta.AuthorizationServers = []string{a.issuer}
	}
	prm := auth.ProtectedResourceMetadataHandler(meta)
	mux := http.NewServeMux()
	mux.Handle(WellKnownPath, prm)
	if u, _ := url.Parse(metaURL); u.Path != WellKnownPath {
		mux.Handle(u.Path, prm)
	}
	mux.Handle("/", guard)
	return mux
}

// withoutToken is r whose Authorization header go-sdk's wrapper still finds (it
// parses it before calling our verifier) but with no token in it.
func withoutToken(r *http.Request) *http.Request {
	r.Header.Set("Authorization", "Bearer verified")
	return r
}

// bearer returns the token of r's Authorization header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(r.Header.Values("Authorization")) != 1 {
		return "", false
	}
	return token, true
}

// maxIDScan bounds how much of a rate-limited request's body is read to find its
// JSON-RPC id.
const maxIDScan = 1 << 20

// idScanTime bounds reading a rate-limited request's body.
const idScanTime = time.Second

// refuseRate answers a request over its identity's rate limit: HTTP 429 with
// Retry-After, and the JSON-RPC error every quota refusal has (-32000, data quota,
// limit and retryAfter) for the request's id (null if the body holds none).
func (a *Authenticator) refuseRate(w http.ResponseWriter, r *http.Request, retryAfter int) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Body != nil {
		// A client over its rate gets no longer than idScanTime to send the body:
		// it must not hold the connection by trickling it.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(idScanTime)) // unsupported: the size bound still holds
		if body, err := io.ReadAll(io.LimitReader(r.Body, maxIDScan)); err == nil {
			_ = json.Unmarshal(body, &msg) // no id: null
		}
	}
	id := msg.ID
	if len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(quotaAnswer{JSONRPC: "2.0", ID: id, Error: quotaErr{Code: CodeQuota,
		Message: fmt.Sprintf("rate limit: more than %g requests per second (rate_limit); retry in %d s", a.rate, retryAfter),
		Data:    quotaData{Quota: "rate_limit", Limit: a.rate, RetryAfter: retryAfter}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(b)
}

// quotaAnswer is a JSON-RPC error response to a request refused by a quota; its
// shape is the host's (host.QuotaData).
type quotaAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   quotaErr        `json:"error"`
}

type quotaErr struct {
	Code    int64     `json:"code"`
	Message string    `json:"message"`
	Data    quotaData `json:"data"`
}

type quotaData struct {
	Quota      string  `json:"quota"`
	Limit      float64 `json:"limit"`
	RetryAfter int     `json:"retryAfter"`
}

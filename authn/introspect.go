package authn

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// DefaultIntrospectionCache is how long an active token's introspection answer is
// reused when Options.IntrospectionCache is 0: a token revoked at the issuer is
// refused here at most this much later, and the issuer is asked once per token per
// period rather than once per request.
const DefaultIntrospectionCache = time.Minute

// Bounds of token introspection.
const (
	maxIntrospectionBytes = 64 << 10
	maxIntrospected       = 10_000           // answers kept; past it, expired ones go, then any
	refusedCache          = 10 * time.Second // an inactive or refused token's answer is reused this long
	maxIntrospecting      = 16               // introspection requests in flight at once
)

// introspector checks opaque access tokens at the issuer's RFC 7662 endpoint, and
// keeps its answers for a while, by the token's SHA-256 (never the token).
type introspector struct {
	url, clientID, secret string
	client                *http.Client
	keep                  time.Duration // an active answer's reuse, at most until its exp
	issuer, resource      string
	skew                  time.Duration
	logger                *slog.Logger

	slots chan struct{} // maxIntrospecting

	mu      sync.Mutex
	answers map[[sha256.Size]byte]introspected
}

// introspected is an answer kept: the identity, or why the token was refused.
type introspected struct {
	ti    *auth.TokenInfo // nil: refused
	err   error
	until time.Time
}

// introspection is the part of an RFC 7662 response that is read.
type introspection struct {
	Active bool             `json:"active"`
	Scope  string           `json:"scope"`
	Sub    string           `json:"sub"`
	Iss    string           `json:"iss"`
	Aud    jwt.Audience     `json:"aud"` // a string or a list
	Exp    *jwt.NumericDate `json:"exp"`
	Nbf    *jwt.NumericDate `json:"nbf"`
}

// verify turns an opaque token into an identity: from a kept answer, or by asking
// the endpoint. The answer must say active, name this server's resource in aud and
// a sub, and, if it says them, the configured iss and an exp and nbf that hold now
// (with the clock skew).
func (in *introspector) verify(ctx context.Context, token string, now time.Time) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	in.mu.Lock()
	got, ok := in.answers[sum]
	in.mu.Unlock()
	if ok && now.Before(got.until) {
		return got.ti, got.err
	}
	resp, err := in.ask(ctx, token)
	if err != nil {
		// Not kept: the next request asks again. The client hears no more than
		// that it failed; the log says why.
		in.logger.Warn("token introspection failed", "url", in.url, "err", err)
		return nil, errInvalid("token introspection failed")
	}
	got = in.check(resp, now)
	in.keep1(sum, got, now)
	return got.ti, got.err
}

// check reads an answer of the endpoint at now.
func (in *introspector) check(r introspection, now time.Time) introspected {
	refuse := func(format string, args ...any) introspected {
		return introspected{err: errInvalid(format, args...), until: now.Add(refusedCache)}
	}
	switch {
	case !r.Active:
		return refuse("token is not active")
	case r.Iss != "" && r.Iss != in.issuer:
		return refuse("token issued by %q, not %q", r.Iss, in.issuer)
	case !slices.Contains(r.Aud, in.resource):
		return refuse("token is not for this resource (aud)")
	case r.Sub == "":
		return refuse("token has no sub")
	case r.Exp != nil && now.After(r.Exp.Time().Add(in.skew)):
		return refuse("token is expired")
	case r.Nbf != nil && now.Add(in.skew).Before(r.Nbf.Time()):
		return refuse("token is not valid yet")
	}
	ti := &auth.TokenInfo{UserID: "oauth:" + in.issuer + "#" + r.Sub, Scopes: strings.Fields(r.Scope)}
	until := now.Add(in.keep)
	if r.Exp != nil {
		ti.Expiration = r.Exp.Time()
		if ti.Expiration.Before(until) {
			until = ti.Expiration
		}
	}
	return introspected{ti: ti, until: until}
}

// keep1 keeps one answer, making room if needed.
func (in *introspector) keep1(sum [sha256.Size]byte, got introspected, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.answers) >= maxIntrospected {
		for k, v := range in.answers {
			if !now.Before(v.until) {
				delete(in.answers, k)
			}
		}
	}
	for k := range in.answers { // still full: any one goes
		if len(in.answers) < maxIntrospected {
			break
		}
		delete(in.answers, k)
	}
	in.answers[sum] = got
}

// ask posts token to the endpoint (RFC 7662 section 2.1), authenticated with the
// client id and secret (HTTP Basic, RFC 6749 section 2.3.1), within fetchTimeout and
// at most maxIntrospecting at once.
func (in *introspector) ask(ctx context.Context, token string) (introspection, error) {
	var r introspection
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		return r, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, strings.NewReader(form.Encode()))
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret))
	resp, err := in.client.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("status %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionBytes+1))
	if err != nil {
		return r, err
	}
	return parseIntrospection(data)
}

// parseIntrospection reads an RFC 7662 response body.
func parseIntrospection(data []byte) (introspection, error) {
	var r introspection
	if len(data) > maxIntrospectionBytes {
		return r, fmt.Errorf("answer larger than %d bytes", maxIntrospectionBytes)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return introspection{}, fmt.Errorf("answer is not an introspection response: %w", err)
	}
	return r, nil
}

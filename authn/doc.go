// Package authn turns an HTTP request into an identity, and says which tools that
// identity may call.
//
// Two modes: an OAuth 2.1 resource server that validates JWT access tokens against
// the issuer's JWKS (go-jose; the issuer, the audience, exp, nbf and iat with a
// bounded clock skew, and the algorithm against an allowlist that never holds "none"
// or HMAC) and, when configured, other tokens at the issuer's RFC 7662 introspection
// endpoint (answers kept for a while, by the token's SHA-256); and static API keys
// kept as SHA-256 hashes and compared in constant time.
//
// [Authenticator.Wrap] guards an http.Handler: a missing or invalid token gets 401
// with WWW-Authenticate: Bearer resource_metadata="..."; a token without the
// required scopes gets 403 with error="insufficient_scope". A valid one reaches the
// handler as go-sdk's auth.TokenInfo (UserID is the identity, which go-sdk binds
// sessions to). An identity past its rate limit gets 429 with Retry-After. Wrap also
// serves the RFC 9728 protected resource metadata.
//
// A JWKS URL is fetched on demand, under one lock: when the keys are older than the
// refresh period, or a token names an unknown key (at most once per 10s). No
// goroutine runs in the background; a slow issuer holds verifications for at most
// the fetch timeout (10s), and a failed fetch keeps the keys it had.
// [Authenticator.Allowed] answers the grants, and [Authenticator.NotGranted] how a
// call outside them is refused: for an OAuth token that another scope would let
// call the tool, with the 403 scope challenge (error="insufficient_scope" and the
// scopes) that the host sends. The token itself goes nowhere else: the handler
// behind Wrap reads "Bearer verified" in Authorization.
package authn

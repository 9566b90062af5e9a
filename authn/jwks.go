package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// DefaultJWKSRefresh is how often a JWKS fetched from a URL is refetched.
const DefaultJWKSRefresh = 15 * time.Minute

// Bounds of fetching a JWKS.
const (
	minRefetch   = 10 * time.Second // unknown key ids refetch at most this often
	fetchTimeout = 10 * time.Second
	maxJWKSBytes = 1 << 20
	maxJWKSKeys  = 100
)

// keySet is the issuer's public signing keys: from a file once, or from a URL,
// refetched every refresh and, rate-limited, when a token names an unknown key.
type keySet struct {
	url     string
	refresh time.Duration
	client  *http.Client
	logger  *slog.Logger

	mu      sync.Mutex // fetches are serialized under it
	keys    map[string]jose.JSONWebKey
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
}

func loadKeySet(file string) (*keySet, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read jwks file: %w", err)
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("jwks file %s: %w", file, err)
	}
	return &keySet{keys: keys}, nil
}

// parseJWKS keeps the asymmetric signing keys of a JWKS, public halves only, by key
// id. Symmetric keys are dropped: HMAC is never accepted.
func parseJWKS(data []byte) (map[string]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("parse jwks: %w", err)
	}
	if len(set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("jwks has %d keys, more than %d", len(set.Keys), maxJWKSKeys)
	}
	keys := map[string]jose.JSONWebKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub := k.Public()
		switch pub.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			keys[k.KeyID] = pub
		}
	}
	return keys, nil
}

// key returns the key with id kid, fetching the set first when it is due or when kid
// is unknown (at most once per minRefetch).
func (s *keySet) key(ctx context.Context, kid string, now time.Time) (jose.JSONWebKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.url != "" {
		_, known := s.keys[kid]
		stale := s.fetched.IsZero() || now.Sub(s.fetched) >= s.refresh
		if (stale || !known) && (s.tried.IsZero() || now.Sub(s.tried) >= minRefetch) {
			s.fetch(ctx, now)
		}
	}
	k, ok := s.keys[kid]
	return k, ok
}

// fetch replaces the keys with the URL's; on failure the old keys stay.
func (s *keySet) fetch(ctx context.Context, now time.Time) {
	s.tried = now
	keys, err := s.get(ctx)
	if err != nil {
		s.logger.Warn("jwks fetch failed; keeping the previous keys", "url", s.url, "err", err)
		return
	}
	s.keys, s.fetched = keys, now
}

func (s *keySet) get(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks larger than %d bytes", maxJWKSBytes)
	}
	return parseJWKS(data)
}

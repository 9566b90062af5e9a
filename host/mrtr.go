package host

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/canonjson"
)

// Request state for the multi round-trip pattern (SEP-2322): on 2026-07-28 a server
// cannot ask the client for input in the middle of a call. A synchronous call whose
// guest asks is answered with InputRequiredResult instead; the client repeats the call
// with the answers and the requestState, and the guest runs again from the start,
// getting the earlier answers, by key, for its requests.
//
// The state travels through the client, so it is signed (HMAC-SHA256 with a key
// drawn at start and never stored, so that a state does not survive a restart; or,
// where several local servers share one task store, the key of Options.StateKey,
// which they share through a file: see LoadStateKey), bound to the tool, a digest of
// the arguments and the requester, valid for stateTTL, and accepted once (by any of
// those servers: Options.Nonces). It holds the answers given so far, which came from the client
// itself; it is signed, not encrypted.

// stateTTL is how long a request state may be answered.
const stateTTL = 10 * time.Minute

// maxStateBytes bounds a request state (the answers it carries).
const maxStateBytes = 256 << 10

// requestState is the signed content.
type requestState struct {
	Tool    string                     `json:"tool"`
	Args    string                     `json:"args"`    // hex sha256 of the canonical arguments
	Owner   string                     `json:"owner"`   // the requester the state was issued to
	Answers map[string]json.RawMessage `json:"answers"` // by key, of earlier rounds
	Keys    []string                   `json:"keys"`    // the input requests of this round
	Expires int64                      `json:"exp"`     // unix milliseconds
	Nonce   string                     `json:"nonce"`
}

// stateSigner issues and checks request states.
type stateSigner struct {
	key    []byte
	nonces Nonces // nil: used holds them all

	mu   sync.Mutex
	used map[string]time.Time // nonce -> expiry, of states already accepted here
}

// Nonces records the nonces of accepted request states where every server that
// shares the signing key sees them (tasks/sqlstore.Store).
type Nonces interface {
	// UseNonce records nonce until expires; it reports false if it was recorded
	// before.
	UseNonce(ctx context.Context, nonce string, expires time.Time) (bool, error)
}

// stateKeyBytes is the size of the signing key.
const stateKeyBytes = 32

// newStateSigner signs with key (nil: a key drawn now) and records used nonces in
// nonces (nil: in memory).
func newStateSigner(key []byte, nonces Nonces) *stateSigner {
	if key == nil {
		key = make([]byte, stateKeyBytes)
		rand.Read(key)
	}
	return &stateSigner{key: key, nonces: nonces, used: map[string]time.Time{}}
}

// LoadStateKey reads the request-state signing key that the servers sharing a data
// directory share, from the file at path, creating it (mode 0600, 32 random bytes) if
// it is absent. A file of another size, or readable by others than its owner, is an
// error naming it.
func LoadStateKey(path string) ([]byte, error) {
	key, err := readStateKey(path)
	if !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	// Written whole under a temporary name, then linked into place: a server
	// starting at the same moment reads either no file or the whole key, and the
	// first link wins.
	key = make([]byte, stateKeyBytes)
	rand.Read(key)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-key-*")
	if err != nil {
		return nil, fmt.Errorf("request state key %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("request state key %s: %w", path, err)
	}
	return readStateKey(path)
}

func readStateKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("request state key %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("request state key %s: %w", path, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o077 != 0 || info.Size() != stateKeyBytes {
		return nil, fmt.Errorf("request state key %s must be a file of %d bytes that only its owner may read (mode 0600), not %v of %d bytes; remove it to have a new one made",
			path, stateKeyBytes, info.Mode(), info.Size())
	}
	key := make([]byte, stateKeyBytes)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, fmt.Errorf("request state key %s: %w", path, err)
	}
	return key, nil
}

// argsDigest is the digest of arguments in a canonical form that loses nothing
// (canonjson: keys sorted, no insignificant space, numbers and strings exact), so
// that the same arguments re-encoded by a client match and any other arguments, even
// ones a lossy decoder would confuse (9007199254740993 and 9007199254740992), do not.
// Arguments that decoders may read differently (a key twice) have no digest.
func argsDigest(args json.RawMessage) (string, error) {
	doc := []byte("{}")
	if t := bytes.TrimSpace(args); len(t) > 0 && string(t) != "null" {
		doc = t
	}
	b, err := canonjson.Canonical(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func (s *stateSigner) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(payload)
	return h.Sum(nil)
}

// issue signs st, filling in its expiry and nonce.
func (s *stateSigner) issue(st requestState, now time.Time) (string, error) {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	st.Nonce = base64.RawURLEncoding.EncodeToString(nonce)
	st.Expires = now.Add(stateTTL).UnixMilli()
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	if len(payload) > maxStateBytes {
		return "", fmt.Errorf("the answers so far take %d bytes, more than the %d a request state may carry", len(payload), maxStateBytes)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(s.mac(payload)), nil
}

// Errors of stateSigner.accept; each is answered -32602.
var (
	errStateForged  = errors.New("requestState was not issued by this server (or was altered); repeat the call without it")
	errStateExpired = errors.New("requestState has expired; repeat the call without it")
	errStateUsed    = errors.New("requestState was already used; repeat the call without it")
	errStateOther   = errors.New("requestState was issued for another call (tool, arguments or requester differ)")
)

// verify checks a state for tool, args and owner; consume then marks it used.
func (s *stateSigner) verify(raw, tool string, args json.RawMessage, owner string, now time.Time) (*requestState, error) {
	if len(raw) > 2*maxStateBytes {
		return nil, errStateForged
	}
	enc := base64.RawURLEncoding
	dot := bytes.IndexByte([]byte(raw), '.')
	if dot < 0 {
		return nil, errStateForged
	}
	payload, err1 := enc.DecodeString(raw[:dot])
	sig, err2 := enc.DecodeString(raw[dot+1:])
	if err1 != nil || err2 != nil || !hmac.Equal(sig, s.mac(payload)) {
		return nil, errStateForged
	}
	var st requestState
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, errStateForged
	}
	digest, err := argsDigest(args)
	if err != nil || st.Tool != tool || st.Args != digest || st.Owner != owner {
		return nil, errStateOther
	}
	if now.UnixMilli() > st.Expires {
		return nil, errStateExpired
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.used[st.Nonce]; ok {
		return nil, errStateUsed
	}
	return &st, nil
}

// consume marks a verified state used; a second use, here or by any server sharing
// the key, is refused.
func (s *stateSigner) consume(ctx context.Context, st *requestState) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.used[st.Nonce]; ok {
		return errStateUsed
	}
	if s.nonces != nil {
		fresh, err := s.nonces.UseNonce(ctx, st.Nonce, time.UnixMilli(st.Expires))
		if err != nil {
			return fmt.Errorf("requestState could not be checked: %w", err)
		}
		if !fresh {
			return errStateUsed
		}
	}
	if len(s.used) >= 1024 { // purge now and then, not on every call
		for n, exp := range s.used {
			if now.After(exp) {
				delete(s.used, n)
			}
		}
	}
	s.used[st.Nonce] = time.UnixMilli(st.Expires)
	return nil
}

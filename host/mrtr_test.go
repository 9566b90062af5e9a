package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRequestState(t *testing.T) {
	s := newStateSigner(nil, nil)
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	args := json.RawMessage(`{"b": 2, "a": [1, {"y": 1, "x": 0}]}`)
	digest, err := argsDigest(args)
	if err != nil {
		t.Fatal(err)
	}
	issue := func() string {
		raw, err := s.issue(requestState{Tool: "tool", Args: digest, Owner: "anonymous",
			Answers: map[string]json.RawMessage{"input-1": json.RawMessage(`{"action":"accept"}`)}, Keys: []string{"input-2"}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	same := json.RawMessage(`{"a":[1,{"x":0,"y":1}],"b":2}`)
	tests := []struct {
		name  string
		tool  string
		args  json.RawMessage
		owner string
		at    time.Time
		want  error
	}{
		{"fine, arguments in another order", "tool", same, "anonymous", t0.Add(time.Minute), nil},
		{"expired", "tool", args, "anonymous", t0.Add(stateTTL + time.Millisecond), errStateExpired},
		{"other tool", "other", args, "anonymous", t0, errStateOther},
		{"other arguments", "tool", json.RawMessage(`{"b":3}`), "anonymous", t0, errStateOther},
		{"other requester", "tool", args, "session:x", t0, errStateOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := s.verify(issue(), tt.tool, tt.args, tt.owner, tt.at)
			if !errors.Is(err, tt.want) {
				t.Fatalf("verify = %v, want %v", err, tt.want)
			}
			if err == nil && (len(st.Answers) != 1 || st.Keys[0] != "input-2") {
				t.Errorf("verify = %+v", st)
			}
		})
	}
	raw := issue()
	st, err := s.verify(raw, "tool", args, "anonymous", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.consume(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if _, err := s.verify(raw, "tool", args, "anonymous", t0); !errors.Is(err, errStateUsed) {
		t.Errorf("verify after use = %v, want %v", err, errStateUsed)
	}
	// Another server (another key) does not accept it.
	if _, err := newStateSigner(nil, nil).verify(raw, "tool", args, "anonymous", t0); !errors.Is(err, errStateForged) {
		t.Errorf("verify by another key = %v, want %v", err, errStateForged)
	}
	// Tampering with the payload, signature kept.
	b := []byte(raw)
	b[5] ^= 2
	if _, err := s.verify(string(b), "tool", args, "anonymous", t0); !errors.Is(err, errStateForged) {
		t.Errorf("verify tampered = %v, want %v", err, errStateForged)
	}
}

func FuzzRequestState(f *testing.F) {
	s := newStateSigner(nil, nil)
	f.Add("a.b")
	f.Add("")
	f.Add("eyJ0b29sIjoidCJ9.AAAA")
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := s.verify(raw, "t", nil, "o", time.Now()); err == nil {
			t.Fatalf("verify(%q) accepted a state it never issued", raw)
		}
	})
}

// TestRequestStateExactArguments: a state is bound to the arguments the guest sees,
// not to what a lossy decoder makes of them.
func TestRequestStateExactArguments(t *testing.T) {
	s := newStateSigner(nil, nil)
	t0 := time.Now()
	tests := []struct {
		name      string
		issuedFor string
		args      string
		want      error
	}{
		{"a number float64 cannot tell apart", `{"n":9007199254740993}`, `{"n":9007199254740992}`, errStateOther},
		{"the same big number", `{"n":9007199254740993}`, `{"n": 9007199254740993}`, nil},
		{"a duplicate key", `{"n":2}`, `{"n":1,"n":2}`, errStateOther},
		{"another spelling of the number", `{"n":1}`, `{"n":1.0}`, errStateOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			digest, err := argsDigest(json.RawMessage(tt.issuedFor))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := s.issue(requestState{Tool: "tool", Args: digest, Owner: "o"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.verify(raw, "tool", json.RawMessage(tt.args), "o", t0); !errors.Is(err, tt.want) {
				t.Errorf("verify(state for %s, %s) = %v, want %v", tt.issuedFor, tt.args, err, tt.want)
			}
		})
	}
}

// TestStateKeyFile: the key file is made once (mode 0600) and then read by every
// server; a file others may read, or of the wrong size, is refused naming it.
func TestStateKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys { // servers starting at once agree on one key
		wg.Go(func() {
			var err error
			if keys[i], err = LoadStateKey(path); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != stateKeyBytes || !bytes.Equal(k, keys[0]) {
			t.Fatalf("LoadStateKey by servers starting at once = %x, want one key of %d bytes", keys, stateKeyBytes)
		}
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", info.Mode())
	}
	loose := filepath.Join(dir, "loose.key")
	os.WriteFile(loose, keys[0], 0o644)
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte("short"), 0o600)
	for _, p := range []string{loose, short} {
		if _, err := LoadStateKey(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("LoadStateKey(%s) = %v, want an error naming the file", p, err)
		}
	}
}

// memNonces is a Nonces shared by two signers, as a task store is by two servers.
type memNonces struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (m *memNonces) UseNonce(_ context.Context, nonce string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[nonce] {
		return false, nil
	}
	m.seen[nonce] = true
	return true, nil
}

// TestStateSharedBetweenServers: a state issued by one server is accepted by another
// that shares the key, once across both.
func TestStateSharedBetweenServers(t *testing.T) {
	key := bytes.Repeat([]byte{7}, stateKeyBytes)
	nonces := &memNonces{seen: map[string]bool{}}
	a, b := newStateSigner(key, nonces), newStateSigner(key, nonces)
	now := time.Now()
	args := json.RawMessage(`{"x":1}`)
	raw, err := a.issue(requestState{Tool: "tool", Args: mustDigest(t, args), Owner: "local"}, now)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.verify(raw, "tool", args, "local", now)
	if err != nil {
		t.Fatalf("verify on the other server = %v", err)
	}
	if err := b.consume(context.Background(), st); err != nil {
		t.Fatalf("consume on the other server = %v", err)
	}
	st, _ = a.verify(raw, "tool", args, "local", now)
	if err := a.consume(context.Background(), st); !errors.Is(err, errStateUsed) {
		t.Errorf("consume again on the first server = %v, want errStateUsed", err)
	}
}

func mustDigest(t *testing.T, args json.RawMessage) string {
	d, err := argsDigest(args)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/boltstore"
)

func open(t testing.TB, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func task(id, owner string, created time.Time, status tasks.Status) tasks.Task {
	return tasks.Task{ID: id, Owner: owner, Status: status, CreatedAt: created, LastUpdatedAt: created,
		TTL: time.Minute, PollInterval: time.Second}
}

func TestRoundTripAndReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, path)
	now := time.Now().UTC().Truncate(time.Millisecond)
	done := task("done", "local", now, tasks.Completed)
	done.FinishedAt = now
	done.Result = json.RawMessage(`{"content":[{"type":"text","text":"<b>&\u00e9</b>"}],  "x":1}`)
	failed := task("failed", "local", now.Add(time.Millisecond), tasks.Failed)
	failed.Error = &tasks.Error{Code: -32603, Message: "boom", Data: json.RawMessage(`{"why":"x"}`)}
	running := task("running", "local", now.Add(2*time.Millisecond), tasks.Working)
	waiting := task("waiting", "session:abc", now.Add(3*time.Millisecond), tasks.InputRequired)
	for _, x := range []tasks.Task{done, failed, running, waiting} {
		if err := s.Put(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := s.Stats(ctx); st.Tasks != 4 || st.Bytes != tasks.Size(done)+tasks.Size(failed) {
		t.Errorf("Stats() = %+v", st)
	}
	s.Close()

	// As after a crash: reopen.
	s = open(t, path)
	defer s.Close()
	got, err := s.Get(ctx, "done")
	if err != nil || string(got.Result) != string(done.Result) || got.Status != tasks.Completed {
		t.Errorf("Get(done) = %s %s, %v; want the result byte for byte", got.Status, got.Result, err)
	}
	if got, _ := s.Get(ctx, "failed"); got.Error == nil || got.Error.Message != "boom" || string(got.Error.Data) != `{"why":"x"}` {
		t.Errorf("Get(failed).Error = %+v", got.Error)
	}
	for _, id := range []string{"running", "waiting"} {
		got, _ := s.Get(ctx, id)
		if got.Status != tasks.Failed || got.StatusMessage != boltstore.RestartMessage || got.FinishedAt.IsZero() {
			t.Errorf("Get(%s) after restart = %s %q, want failed with the restart message", id, got.Status, got.StatusMessage)
		}
	}
	if st, _ := s.Stats(ctx); st.Tasks != 4 {
		t.Errorf("Stats() after reopen = %+v, want 4 tasks", st)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get(nope) = %v, want ErrNotFound", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked.db")
	holder := open(t, locked)
	defer holder.Close()
	corrupt := filepath.Join(dir, "corrupt.db")
	os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	aDir := filepath.Join(dir, "adir.db")
	os.Mkdir(aDir, 0o700)
	tests := []struct {
		path, want string
	}{
		{locked, "is locked by another process"},
		{corrupt, "is corrupt or not a task store"},
		{aDir, aDir},
	}
	for _, tt := range tests {
		_, err := boltstore.Open(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("Open(%s) = %v, want an error naming the file and containing %q", tt.path, err, tt.want)
		}
	}
	if b, _ := os.ReadFile(corrupt); !strings.HasPrefix(string(b), "not a database") {
		t.Error("the corrupt file was changed")
	}
}

// storeFile writes a store with enough tasks to fill several data pages, closes it and
// returns its bytes.
func storeFile(t testing.TB) []byte {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, path)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 200 {
		x := task(fmt.Sprintf("task-%03d", i), "local", base.Add(time.Duration(i)*time.Second), tasks.Completed)
		x.FinishedAt = x.CreatedAt
		x.Result = json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 100+i)))
		if err := s.Put(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenDamaged: a store file truncated or overwritten anywhere is refused with an
// error naming the file, never a fault (a truncated file used to crash the process
// with SIGBUS inside bbolt), and the file is left as it was.
func TestOpenDamaged(t *testing.T) {
	good := storeFile(t)
	const page = 4096
	if len(good) < 8*page {
		t.Fatalf("store is %d bytes, want at least 8 pages", len(good))
	}
	withBytes := func(off int, b []byte) []byte {
		c := bytes.Clone(good)
		copy(c[off:], b)
		return c
	}
	garbage := bytes.Repeat([]byte{0xA5}, page)
	used := highWater(good) * page // bbolt grows the file ahead of its high-water mark
	if used < 4*page || used > len(good) {
		t.Fatalf("high-water mark at byte %d of %d", used, len(good))
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"truncated mid meta 0", good[:100]},
		{"truncated mid meta 1", good[:page+100]},
		{"truncated after the meta pages", good[:2*page]},
		{"truncated after the first data page", good[:3*page]},
		{"truncated mid data", good[:len(good)/2]},
		{"truncated mid page", good[:len(good)/2+100]},
		{"truncated one page below the high-water mark", good[:used-page]},
		{"truncated one byte below the high-water mark", good[:used-1]},
		{"both meta pages overwritten", withBytes(0, bytes.Repeat([]byte{0xA5}, 2*page))},
		{"data page overwritten", withBytes(2*page, garbage)},
		{"data pages overwritten", withBytes(2*page, bytes.Repeat(garbage, (len(good)-2*page)/page))},
		{"data zeroed", withBytes(2*page, make([]byte, len(good)-2*page))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tasks.db")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := boltstore.Open(path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil, want an error", tt.name)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it away") {
				t.Errorf("Open(%s) = %v, want an error naming the file and what to do", tt.name, err)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, tt.data) {
				t.Errorf("Open(%s) changed the file", tt.name)
			}
		})
	}
	// The pages past the high-water mark are free space: without them the store is whole.
	path := filepath.Join(t.TempDir(), "tasks.db")
	os.WriteFile(path, good[:used], 0o600)
	s := open(t, path)
	defer s.Close()
	if st, _ := s.Stats(context.Background()); st.Tasks != 200 {
		t.Errorf("store cut at its high-water mark: Stats() = %+v, want 200 tasks", st)
	}
}

// highWater returns the high-water mark (pages in use) of the bbolt file b: that of the
// meta page with the higher transaction id.
func highWater(b []byte) int {
	le := binary.NativeEndian
	m0, m1 := b[16:], b[4096+16:]
	if le.Uint64(m1[48:]) > le.Uint64(m0[48:]) {
		m0 = m1
	}
	return int(le.Uint64(m0[40:]))
}

// TestNoResume: the bolt store keeps no journal, so a task on it is never resumed: a
// recipe, a checkpoint and a restart after its worker died are each refused with
// tasks.ErrNoJournal, and the restart leaves the task as it was (the host then fails
// it with its worker's error, as a tool that is not resumable).
func TestNoResume(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "tasks.db"))
	defer s.Close()
	m := tasks.NewManager(tasks.Options{Store: s})
	defer m.Close(ctx)
	errs := make(chan [3]error, 1)
	created, err := m.Start(ctx, tasks.Requester{Owner: "local"}, time.Hour, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		var got [3]error
		got[0] = h.SetRecipe(ctx, []byte(`{"tool":"x"}`))
		got[1] = h.SaveCheckpoint(ctx, []byte("1"))
		_, _, got[2] = h.Restart(ctx)
		errs <- got
		return nil, "its worker stopped", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range <-errs {
		if !errors.Is(err, tasks.ErrNoJournal) {
			t.Errorf("[SetRecipe, SaveCheckpoint, Restart][%d] = %v, want ErrNoJournal", i, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := m.Wait(wctx, "local", created.ID); err != nil || got.Status != tasks.Failed || got.StatusMessage != "its worker stopped" {
		t.Errorf("task = %s %q, %v; want failed by its work, no restart noted", got.Status, got.StatusMessage, err)
	}
}

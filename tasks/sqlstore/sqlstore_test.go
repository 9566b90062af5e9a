package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

func open(t testing.TB, path string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
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
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	s := open(t, path)
	now := time.Now().UTC()
	done := task("done", "local", now, tasks.Completed)
	done.FinishedAt = now
	done.Result = json.RawMessage(`{"content":[{"type":"text","text":"<b>&\u00e9</b>"}],  "x":1}`)
	failed := task("failed", "local", now.Add(time.Millisecond), tasks.Failed)
	failed.Error = &tasks.Error{Code: -32603, Message: "boom", Data: json.RawMessage(`{"why":"x"}`)}
	running := task("running", "local", now.Add(2*time.Millisecond), tasks.Working)
	running.Runner = s.Instance()
	waiting := task("waiting", "session:abc", now.Add(3*time.Millisecond), tasks.InputRequired)
	waiting.Runner = s.Instance()
	for _, x := range []tasks.Task{done, failed, running, waiting} {
		if err := s.Put(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := s.Stats(ctx); st.Tasks != 4 || st.Bytes != tasks.Size(done)+tasks.Size(failed) {
		t.Errorf("Stats() = %+v", st)
	}
	for _, f := range []string{path, path + "-wal"} {
		if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600: results are the owner's alone", f, info.Mode(), err)
		}
	}
	if got, _ := s.Get(ctx, "running"); got.Status != tasks.Working {
		t.Errorf("Get(running) while its instance lives = %s, want working", got.Status)
	}
	s.Close()

	s = open(t, path)
	defer s.Close()
	got, err := s.Get(ctx, "done")
	if err != nil || string(got.Result) != string(done.Result) || got.Status != tasks.Completed || !got.CreatedAt.Equal(now) {
		t.Errorf("Get(done) = %s %s %v, %v; want the result byte for byte", got.Status, got.Result, got.CreatedAt, err)
	}
	if got, _ := s.Get(ctx, "failed"); got.Error == nil || got.Error.Message != "boom" || string(got.Error.Data) != `{"why":"x"}` {
		t.Errorf("Get(failed).Error = %+v", got.Error)
	}
	for _, id := range []string{"running", "waiting"} {
		got, _ := s.Get(ctx, id)
		if got.Status != tasks.Failed || got.StatusMessage != sqlstore.LostMessage || got.FinishedAt.IsZero() {
			t.Errorf("Get(%s) after its instance closed = %s %q, want failed with LostMessage", id, got.Status, got.StatusMessage)
		}
	}
	if st, _ := s.Stats(ctx); st.Tasks != 4 {
		t.Errorf("Stats() after reopen = %+v, want 4 tasks", st)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get(nope) = %v, want ErrNotFound", err)
	}
}

func TestListAndExpiry(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "tasks.sqlite"))
	defer s.Close()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		x := task(string(rune('a'+i)), "me", base.Add(time.Duration(i)*time.Second), tasks.Completed)
		x.FinishedAt = x.CreatedAt
		s.Put(ctx, x)
	}
	other := task("other", "you", base, tasks.Working)
	other.Runner = s.Instance()
	s.Put(ctx, other)
	var ids []string
	after := ""
	for {
		page, err := s.List(ctx, "me", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, x := range page {
			ids = append(ids, x.ID)
		}
		after = page[len(page)-1].ID
	}
	if strings.Join(ids, "") != "abcdefg" {
		t.Errorf("listed %v, want a..g in creation order", ids)
	}
	if _, err := s.List(ctx, "you", "a", 3); !errors.Is(err, tasks.ErrBadCursor) {
		t.Errorf("List with another owner's cursor = %v, want ErrBadCursor", err)
	}
	expired, _ := s.Expired(ctx, base.Add(61500*time.Millisecond))
	if strings.Join(expired, ",") != "a,b" {
		t.Errorf("Expired() = %v, want [a b]", expired)
	}
	s.Delete(ctx, "a")
	if st, _ := s.Stats(ctx); st.Tasks != 7 {
		t.Errorf("Stats() after a delete = %+v", st)
	}
	if expired, _ := s.Expired(ctx, base.Add(24*time.Hour)); len(expired) != 6 {
		t.Errorf("Expired(a day later) = %v, want the 6 finished tasks, not the working one", expired)
	}
}

// TestOpenErrors: a file that is not a task store, a directory, and a store of a
// newer schema are refused with an error naming the file, and left as they were.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.sqlite")
	os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	aDir := filepath.Join(dir, "adir.sqlite")
	os.Mkdir(aDir, 0o700)
	newer := filepath.Join(dir, "newer.sqlite")
	s := open(t, newer)
	if err := s.SetVersion(ctx, 99); err != nil {
		t.Fatal(err)
	}
	s.Close()
	damaged := filepath.Join(dir, "damaged.sqlite")
	s = open(t, damaged)
	for i := range 200 {
		x := task(fmt.Sprintf("t%03d", i), "local", time.Now(), tasks.Completed)
		x.Result = json.RawMessage(`{"content":[]}`)
		s.Put(ctx, x)
	}
	s.Close()
	b, _ := os.ReadFile(damaged)
	for i := 4096; i < len(b); i++ { // every page after the first overwritten
		b[i] = 0xA5
	}
	os.WriteFile(damaged, b, 0o600)
	tests := []struct {
		path, want string
	}{
		{corrupt, "is corrupt or not a task store"},
		{aDir, "is not a regular file"},
		{newer, "was written by a newer mcp-wasmhost: schema version 99"},
		{damaged, "is corrupt or not a task store"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			before, _ := os.ReadFile(tt.path)
			s, err := sqlstore.Open(ctx, tt.path, sqlstore.Options{})
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("Open(%s) = %v, want an error naming the file and containing %q", tt.path, err, tt.want)
			}
			if after, _ := os.ReadFile(tt.path); string(after) != string(before) {
				t.Error("the file was changed")
			}
		})
	}
}

func TestManagerOnSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	s := open(t, path)
	m := tasks.NewManager(tasks.Options{Store: s, MaxResultBytes: 10})
	small, _ := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		return json.RawMessage(`{"ok":1}`), "", nil
	})
	big, _ := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		return json.RawMessage(`{"ok":"far too long"}`), "", nil
	})
	if got, _ := m.Wait(ctx, "local", small.ID); got.Status != tasks.Completed {
		t.Errorf("small result: %s", got.Status)
	}
	if got, _ := m.Wait(ctx, "local", big.ID); got.Status != tasks.Failed || !strings.Contains(got.StatusMessage, "max_result_bytes") {
		t.Errorf("big result: %s %q, want failed naming max_result_bytes", got.Status, got.StatusMessage)
	}
	m.Close(ctx)
	s.Close()

	s = open(t, path)
	defer s.Close()
	m = tasks.NewManager(tasks.Options{Store: s, MaxStoredTasks: 2})
	defer m.Close(ctx)
	if got, err := m.Get(ctx, "local", small.ID); err != nil || string(got.Result) != `{"ok":1}` {
		t.Errorf("after restart: %s, %v", got.Result, err)
	}
	if _, err := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, nil); !errors.Is(err, tasks.ErrStoreFull) {
		t.Errorf("Start with the store full = %v, want ErrStoreFull", err)
	}
}

// TestPurgeBatches purges 1,100 expired tasks through the Manager, in batches of one
// commit each, and leaves the unexpired and the unfinished ones.
func TestPurgeBatches(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "tasks.sqlite"))
	defer s.Close()
	const n = 1100 // more than one purge batch (1000)
	base := time.Now().UTC().Add(-time.Hour)
	put := func(from, to int, status tasks.Status, created time.Time) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := from + w; i < to; i += 8 {
					x := task(fmt.Sprintf("t%05d", i), fmt.Sprintf("owner%d", i%7), created, status)
					x.FinishedAt = created
					x.Result = json.RawMessage(`{"content":[]}`)
					x.Runner = s.Instance()
					if err := s.Put(ctx, x); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	setup := time.Now()
	put(0, n, tasks.Completed, base)
	t.Logf("stored %d tasks in %v", n, time.Since(setup))
	put(n, n+10, tasks.Completed, time.Now())
	put(n+10, n+20, tasks.Working, base)
	m := tasks.NewManager(tasks.Options{Store: s, SweepEvery: time.Hour})
	defer m.Close(ctx)
	start := time.Now()
	got := m.Purge(ctx, time.Now())
	t.Logf("purged %d expired tasks in %v", got, time.Since(start))
	if got != n {
		t.Errorf("Purge() = %d, want %d", got, n)
	}
	if st, _ := s.Stats(ctx); st.Tasks != 20 || st.Bytes != 20*int64(len(`{"content":[]}`)) {
		t.Errorf("Stats() after the purge = %+v, want 20 tasks", st)
	}
	if page, _ := s.List(ctx, "owner0", "", 10000); len(page) != 2 { // t01106, t01113
		t.Errorf("List(owner0) after the purge = %d tasks, want 2", len(page))
	}
}

// TestTwoInstances: two instances on one file. A task one runs is seen, waited for,
// answered and cancelled through the other, and the first answer wins.
func TestTwoInstances(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	s1, s2 := open(t, path), open(t, path)
	defer s1.Close()
	defer s2.Close()
	m1 := tasks.NewManager(tasks.Options{Store: s1})
	m2 := tasks.NewManager(tasks.Options{Store: s2})
	defer m1.Close(ctx)
	defer m2.Close(ctx)
	local := tasks.Requester{Owner: "local"}

	asker, _ := m1.Start(ctx, local, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		ans, err := h.Ask(ctx, "elicitation/create", json.RawMessage(`{"message":"name?"}`), nil)
		if err != nil {
			return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
		}
		return ans, "", nil
	})
	var inputs []*tasks.Input
	deadline := time.Now().Add(10 * time.Second)
	for len(inputs) == 0 && time.Now().Before(deadline) {
		var task tasks.Task
		task, inputs, _, _ = m2.Watch(ctx, "local", asker.ID)
		if task.Status != tasks.InputRequired {
			inputs = nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(inputs) != 1 || inputs[0].Method != "elicitation/create" {
		t.Fatalf("inputs seen by the other instance = %v, want the elicitation", inputs)
	}
	if !m2.Answer("local", asker.ID, inputs[0].Key, tasks.Reply{Result: json.RawMessage(`{"action":"accept"}`)}) {
		t.Error("Answer through the other instance = false, want true")
	}
	if m2.Answer("local", asker.ID, inputs[0].Key, tasks.Reply{Result: json.RawMessage(`{"action":"decline"}`)}) {
		t.Error("second Answer = true, want false: the first answer wins")
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := m2.Wait(wctx, "local", asker.ID); err != nil || got.Status != tasks.Completed || string(got.Result) != `{"action":"accept"}` {
		t.Errorf("Wait through the other instance = %s %s, %v; want completed with the answer", got.Status, got.Result, err)
	}

	stopped := make(chan struct{})
	blocked, _ := m1.Start(ctx, local, 0, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		<-ctx.Done()
		close(stopped)
		return nil, "", nil
	})
	start := time.Now()
	if got, err := m2.Cancel(ctx, "local", blocked.ID); err != nil || got.Status != tasks.Cancelled {
		t.Fatalf("Cancel through the other instance = %s, %v", got.Status, err)
	}
	select {
	case <-stopped:
		t.Logf("cancel reached the running instance in %v", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel did not stop the work on the running instance")
	}
	if got, _ := m1.Get(ctx, "local", blocked.ID); got.Status != tasks.Cancelled {
		t.Errorf("task after cancel = %s, want it to stay cancelled", got.Status)
	}
	if page, _, _ := m2.List(ctx, "local", ""); len(page) != 2 {
		t.Errorf("List through the other instance = %d tasks, want 2", len(page))
	}
}

// TestStoppedInstance: the tasks of an instance that died (SIGKILL: no cleanup) are
// failed by another instance's check, and only those.
func TestStoppedInstance(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	dead, live := open(t, path), open(t, path)
	defer live.Close()
	now := time.Now().UTC()
	a := task("a", "local", now, tasks.Working)
	a.Runner = dead.Instance()
	b := task("b", "local", now, tasks.Working)
	b.Runner = live.Instance()
	dead.Put(ctx, a)
	live.Put(ctx, b)
	if err := live.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := live.Get(ctx, "a"); got.Status != tasks.Working {
		t.Fatalf("task of a live instance after a check = %s, want working", got.Status)
	}
	dead.Crash()
	if err := live.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := live.Get(ctx, "a"); got.Status != tasks.Failed || got.StatusMessage != sqlstore.LostMessage {
		t.Errorf("task of a stopped instance = %s %q, want failed with LostMessage", got.Status, got.StatusMessage)
	}
	if got, _ := live.Get(ctx, "b"); got.Status != tasks.Working {
		t.Errorf("task of the live instance = %s, want working", got.Status)
	}
}

func TestNonces(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	s1, s2 := open(t, path), open(t, path)
	defer s1.Close()
	defer s2.Close()
	exp := time.Now().Add(time.Minute)
	if ok, err := s1.UseNonce(ctx, "n1", exp); !ok || err != nil {
		t.Errorf("first UseNonce = %v, %v; want true", ok, err)
	}
	if ok, err := s2.UseNonce(ctx, "n1", exp); ok || err != nil {
		t.Errorf("UseNonce again on another instance = %v, %v; want false", ok, err)
	}
}

// TestConcurrentUpdates hammers one task from two instances (two processes' worth of
// connections) and many goroutines: no read-modify-write is lost, and a writer that
// fails in a shared transaction leaves the others' writes in.
func TestConcurrentUpdates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	s1, s2 := open(t, path), open(t, path)
	defer s1.Close()
	defer s2.Close()
	x := task("counter", "local", time.Now().UTC(), tasks.Working)
	x.Runner = s1.Instance()
	x.StatusMessage = "0"
	if err := s1.Put(ctx, x); err != nil {
		t.Fatal(err)
	}
	const perWorker = 20
	var wg sync.WaitGroup
	for w := range 8 {
		s := []*sqlstore.Store{s1, s2}[w%2]
		wg.Go(func() {
			for range perWorker {
				_, err := s.Update(ctx, "counter", func(t *tasks.Task) error {
					var n int
					fmt.Sscan(t.StatusMessage, &n)
					t.StatusMessage = fmt.Sprint(n + 1)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				// A failing writer beside it: its error comes back as it is.
				refuse := errors.New("refused")
				if _, err := s.Update(ctx, "counter", func(t *tasks.Task) error {
					t.StatusMessage = "lost"
					return refuse
				}); err != refuse {
					t.Errorf("Update returning an error = %v, want it unchanged", err)
				}
				if _, err := s.Update(ctx, "missing", func(*tasks.Task) error { return nil }); !errors.Is(err, tasks.ErrNotFound) {
					t.Errorf("Update(missing) = %v, want ErrNotFound", err)
				}
			}
		})
	}
	wg.Wait()
	got, err := s2.Get(ctx, "counter")
	if err != nil || got.StatusMessage != fmt.Sprint(8*perWorker) {
		t.Errorf("counter after %d updates from two instances = %q, %v", 8*perWorker, got.StatusMessage, err)
	}
}

// TestLeases: an instance on this machine is judged by its lock, whatever its lease
// (a laptop that slept); one without a lock file here, by its lease.
func TestLeases(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.sqlite")
	asleep, live := open(t, path), open(t, path)
	defer asleep.Close()
	defer live.Close()
	now := time.Now().UTC()
	put := func(id, runner string) {
		x := task(id, "local", now, tasks.Working)
		x.Runner = runner
		if err := live.Put(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	put("asleep", asleep.Instance())
	put("remote-live", "remote1")
	put("remote-gone", "remote2")
	live.SetLease(ctx, asleep.Instance(), now.Add(-time.Minute))
	live.SetLease(ctx, "remote1", now.Add(time.Minute))
	live.SetLease(ctx, "remote2", now.Add(-time.Second))
	if err := live.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]tasks.Status{"asleep": tasks.Working, "remote-live": tasks.Working, "remote-gone": tasks.Failed} {
		if got, _ := live.Get(ctx, id); got.Status != want {
			t.Errorf("task %s after a check = %s, want %s", id, got.Status, want)
		}
	}
}

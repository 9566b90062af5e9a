package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/pgtest"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/storetest"
)

// engine opens instances of one store: a SQLite file, or a PostgreSQL database.
type engine struct {
	name string
	// store makes a new, empty store and returns how to open an instance of it.
	store func(t testing.TB) func(t testing.TB) (*sqlstore.Store, error)
}

// engines are SQLite and PostgreSQL (a server started for the test, on first use).
func engines(outer testing.TB) []engine {
	var srv *pgtest.Server
	return []engine{
		{"sqlite", func(t testing.TB) func(testing.TB) (*sqlstore.Store, error) {
			path := filepath.Join(t.TempDir(), "tasks.sqlite")
			return func(testing.TB) (*sqlstore.Store, error) {
				return sqlstore.Open(context.Background(), path, sqlstore.Options{})
			}
		}},
		{"postgres", func(t testing.TB) func(testing.TB) (*sqlstore.Store, error) {
			if srv == nil {
				srv = pgtest.Start(outer) // one server for all of outer's subtests
			}
			dsn := srv.NewDatabase(t)
			return func(testing.TB) (*sqlstore.Store, error) {
				return sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Options{})
			}
		}},
	}
}

// instances makes a new store of e and returns an opener of its instances, each
// closed at the end of t.
func instances(t testing.TB, e engine) func() *sqlstore.Store {
	open := e.store(t)
	return func() *sqlstore.Store {
		t.Helper()
		s, err := open(t)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestContract runs the store contract on SQLite and PostgreSQL.
func TestContract(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) (tasks.Store, func() tasks.Store) {
				open := instances(t, e)
				return open(), func() tasks.Store { return open() }
			})
		})
	}
}

func task(id, owner string, created time.Time, status tasks.Status) tasks.Task {
	return storetest.Task(id, owner, created, status)
}

// TestReopen: what a store holds survives its instances, byte for byte, and the
// unfinished tasks of an instance that closed are failed with LostMessage when the
// store is next opened; a SQLite file is its owner's alone.
func TestReopen(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			open := e.store(t)
			s, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			done := task("done", "local", now, tasks.Completed)
			done.FinishedAt = now
			done.Result = json.RawMessage(`{"content":[{"type":"text","text":"<b>&\u00e9</b>"}],  "x":1}`)
			running := task("running", "local", now, tasks.Working)
			running.Runner = s.Instance()
			waiting := task("waiting", "session:abc", now, tasks.InputRequired)
			waiting.Runner = s.Instance()
			for _, x := range []tasks.Task{done, running, waiting} {
				if err := s.Put(ctx, x); err != nil {
					t.Fatal(err)
				}
			}
			if p := s.Path(); p != "" {
				for _, f := range []string{p, p + "-wal"} {
					if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 {
						t.Errorf("%s: %v, %v; want mode 0600: results are the owner's alone", f, info.Mode(), err)
					}
				}
			}
			s.Close()
			s, err = open(t)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got, err := s.Get(ctx, "done"); err != nil || string(got.Result) != string(done.Result) || !got.CreatedAt.Equal(now) {
				t.Errorf("Get(done) after reopen = %s %v, %v; want the result byte for byte", got.Result, got.CreatedAt, err)
			}
			for _, id := range []string{"running", "waiting"} {
				got, _ := s.Get(ctx, id)
				if got.Status != tasks.Failed || got.StatusMessage != sqlstore.LostMessage || got.FinishedAt.IsZero() {
					t.Errorf("Get(%s) after its instance closed = %s %q, want failed with LostMessage", id, got.Status, got.StatusMessage)
				}
			}
			if st, _ := s.Stats(ctx); st.Tasks != 3 {
				t.Errorf("Stats() after reopen = %+v, want 3 tasks", st)
			}
		})
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
	s, err := sqlstore.Open(ctx, newer, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetVersion(ctx, 99); err != nil {
		t.Fatal(err)
	}
	s.Close()
	damaged := filepath.Join(dir, "damaged.sqlite")
	s, err = sqlstore.Open(ctx, damaged, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
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

// TestPostgresOpenErrors: a server that cannot be reached, a bad URL and a schema of
// a newer version are refused with an error naming the DSN, its password as xxxxx.
func TestPostgresOpenErrors(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	newer := srv.NewDatabase(t)
	s, err := sqlstore.OpenPostgres(ctx, newer, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetVersion(ctx, 99); err != nil {
		t.Fatal(err)
	}
	s.Close()
	const pw = "s3cret-pw"
	withPW := strings.Replace(newer, "postgres@", "postgres:"+pw+"@", 1)
	nowhere := "postgres://mcp:" + pw + "@/tasks?host=" + filepath.Join(t.TempDir(), "nosocket") + "&connect_timeout=2"
	tests := []struct {
		name, dsn, want, named string
	}{
		{"unreachable", nowhere, "is unreachable", "postgres://mcp:xxxxx@/tasks?"},
		{"bad URL", "postgres://mcp:" + pw + "@host:notaport/tasks", "bad PostgreSQL URL", "postgres://mcp:xxxxx@host:notaport/tasks"},
		{"bad parameter", "postgresql://mcp:" + pw + "@/tasks?connect_timeout=soon", "bad PostgreSQL URL", "postgresql://mcp:xxxxx@/tasks?connect_timeout=soon"},
		{"newer schema", withPW, "was written by a newer mcp-wasmhost: schema version 99", "postgres://postgres:xxxxx@/db"},
		{"password parameter", nowhere + "&password=" + pw, "is unreachable", "password=xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sqlstore.OpenPostgres(ctx, tt.dsn, sqlstore.Options{})
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.named) {
				t.Errorf("OpenPostgres = %v, want an error containing %q and naming %q", err, tt.want, tt.named)
			}
			if err != nil && strings.Contains(err.Error(), pw) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestPostgresHungWriter: a session that holds the write lock (a replica hung in the
// middle of a write) stops the others' writes for at most busyTimeout: they then fail
// with an error naming the store, and write again once the lock is free.
func TestPostgresHungWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10 s lock timeout")
	}
	ctx := context.Background()
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	s, err := sqlstore.OpenPostgres(ctx, dsn, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]string{"lock_timeout": "10s", "idle_in_transaction_session_timeout": "10s"} {
		if got, err := s.WriteSetting(ctx, name); err != nil || got != want {
			t.Errorf("write connection's %s = %q, %v; want %q", name, got, err, want)
		}
	}
	hung, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close(ctx)
	tx, err := hung.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", sqlstore.WriteLockKey); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Put(ctx, task("x", "local", time.Now(), tasks.Completed))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "task store postgres://") || took > 15*time.Second {
		t.Errorf("Put while another session holds the write lock = %v after %v; want an error naming the store within the lock timeout", err, took)
	}
	t.Logf("Put behind a hung writer failed after %v: %v", took.Round(time.Millisecond), err)
	tx.Rollback(ctx)
	if err := s.Put(ctx, task("x", "local", time.Now(), tasks.Completed)); err != nil {
		t.Errorf("Put after the lock was released = %v", err)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://u:pw@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgresql://u:p%40ss@h/db?sslmode=disable", "postgresql://u:xxxxx@h/db?sslmode=disable"},
		{"postgres://h/db?password=pw&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"},
		{"postgres://u:pw@h:bad port/db", "postgres://u:xxxxx@h:bad port/db"},
	}
	for _, tt := range tests {
		if got := sqlstore.Redact(tt.dsn); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

// TestStoppedInstance: the tasks of an instance that died (SIGKILL: no cleanup) are
// failed by another instance's check, and only those.
func TestStoppedInstance(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			open := e.store(t)
			dead, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			live, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
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
			// PostgreSQL ends the dead connection's session (and its lock) a moment
			// after the socket closed: check until it has.
			start := time.Now()
			var got tasks.Task
			for time.Since(start) < 10*time.Second {
				if err := live.Recover(ctx); err != nil {
					t.Fatal(err)
				}
				if got, _ = live.Get(ctx, "a"); got.Status != tasks.Working {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("the stopped instance's task failed %v after it stopped", time.Since(start))
			if got.Status != tasks.Failed || got.StatusMessage != sqlstore.LostMessage {
				t.Errorf("task of a stopped instance = %s %q, want failed with LostMessage", got.Status, got.StatusMessage)
			}
			if got, _ := live.Get(ctx, "b"); got.Status != tasks.Working {
				t.Errorf("task of the live instance = %s, want working", got.Status)
			}
		})
	}
}

// TestLeases: on SQLite an instance on this machine is judged by its lock, whatever
// its lease (a laptop that slept), and one without a lock file here by its lease. On
// PostgreSQL an instance is gone when its session lock is not held, or when its
// lease ran out although its lock is (it hangs).
func TestLeases(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			open := instances(t, e)
			asleep, live := open(), open()
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
			want := map[string]tasks.Status{"asleep": tasks.Working, "remote-live": tasks.Working, "remote-gone": tasks.Failed}
			if e.name == "postgres" {
				// asleep holds its lock but its lease ran out: it hangs. The
				// remote rows hold no lock: their sessions are gone.
				want = map[string]tasks.Status{"asleep": tasks.Failed, "remote-live": tasks.Failed, "remote-gone": tasks.Failed}
			}
			for id, w := range want {
				if got, _ := live.Get(ctx, id); got.Status != w {
					t.Errorf("task %s after a check = %s, want %s", id, got.Status, w)
				}
			}
		})
	}
}

package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinDir holds the server binaries (Debian's postgresql-15).
const BinDir = "/usr/lib/postgresql/15/bin"

// SkipEnv names the environment variable that, set to 1, skips the PostgreSQL tests
// instead of failing them where the binaries are missing.
const SkipEnv = "MCP_WASMHOST_NO_POSTGRES"

// startTimeout bounds initdb plus the server's start on a loaded machine.
const startTimeout = 60 * time.Second

// Server is a running PostgreSQL server of one test.
type Server struct {
	dir  string // everything: data/, the socket, the log
	sock string // the socket's directory
	cmd  *exec.Cmd
	n    atomic.Int64 // databases made
}

// Start runs initdb in a new temporary directory and starts the server on a unix
// socket there; the test's cleanup stops it and removes the directory.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := os.Stat(filepath.Join(BinDir, "initdb")); err != nil && os.Getenv(SkipEnv) == "1" {
		t.Skipf("PostgreSQL not installed (%s=1)", SkipEnv)
	}
	s, err := Launch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Log(err)
		}
	})
	return s
}

// Launch is Start outside a test (a benchmark harness): Stop it.
func Launch(ctx context.Context) (*Server, error) {
	if _, err := os.Stat(filepath.Join(BinDir, "initdb")); err != nil {
		return nil, fmt.Errorf("PostgreSQL 15 server binaries not found in %s: install Debian's postgresql package (apt-get install postgresql), or set %s=1 to skip the PostgreSQL tests", BinDir, SkipEnv)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, sock: dir}
	fail := func(err error) (*Server, error) {
		s.Stop()
		return nil, err
	}
	cred, err := asPostgres(dir)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(BinDir, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %v\n%s", err, out))
	}
	var log bytes.Buffer
	s.cmd = exec.Command(filepath.Join(BinDir, "postgres"), "-D", data, "-k", s.sock,
		"-c", "listen_addresses=", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	s.cmd.Stdout, s.cmd.Stderr = &log, &log
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fail(fmt.Errorf("start postgres: %v", err))
	}
	for {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			conn.Close(ctx)
			return s, nil
		}
		if ctx.Err() != nil {
			return fail(fmt.Errorf("postgres did not start within %v: %v\n%s", startTimeout, err, log.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// asPostgres is the credential the server runs under: the postgres OS user when the
// test runs as root (PostgreSQL refuses root), which then owns dir; else nil, the
// test's own user.
func asPostgres(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres OS user (Debian's postgresql package makes it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Stop shuts the server down (fast shutdown: SIGINT; killed after 10 s) and removes
// its directory.
func (s *Server) Stop() error {
	defer os.RemoveAll(s.dir)
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
		return errors.New("postgres did not stop within 10 s; killed")
	}
}

// DSN is the URL of database db on the server, as its superuser over the socket.
func (s *Server) DSN(db string) string {
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + db,
		RawQuery: url.Values{"host": {s.sock}}.Encode()}).String()
}

// Socket is the directory of the server's unix socket.
func (s *Server) Socket() string { return s.sock }

// NewDatabase creates an empty database and returns its DSN.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	dsn, err := s.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// CreateDatabase is NewDatabase outside a test.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := "db" + strconv.FormatInt(s.n.Add(1), 10)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

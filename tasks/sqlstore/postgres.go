package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// isPostgres reports whether store is a postgres:// or postgresql:// URL.
func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// connectTimeout bounds reaching the server at Open, and each reconnection of an
// instance's own connection.
const connectTimeout = 10 * time.Second

// OpenPostgres opens the task store in the PostgreSQL database dsn (a postgres:// or
// postgresql:// URL), brings its schema up to date, registers this process as an
// instance, and fails the unfinished tasks of instances that are gone. A bad URL, a
// server that cannot be reached, and a schema of a newer version are errors naming
// the DSN with its password replaced by xxxxx; nothing is reset. Close it.
//
// Each instance holds a session advisory lock on a connection of its own, on which it
// also LISTENs for the signals sent to it: when its process dies, PostgreSQL ends
// that session, the lock goes, and the next check of any other instance (every
// RenewEvery) fails its tasks. A process that hangs keeps its lock; it is judged by
// its lease.
func OpenPostgres(ctx context.Context, dsn string, opts Options) (*Store, error) {
	name := Redact(dsn)
	pw := password(dsn)
	if !isPostgres(dsn) {
		return nil, fmt.Errorf("task store %s: not a postgres:// or postgresql:// URL", name)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("task store %s: bad PostgreSQL URL: %s", name, scrub(err, pw))
	}
	db := stdlib.OpenDB(*cfg.Copy())
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	wcfg := cfg.Copy()
	for k, v := range writeSettings {
		wcfg.RuntimeParams[k] = v
	}
	wdb := stdlib.OpenDB(*wcfg)
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	err = wdb.PingContext(pctx)
	cancel()
	if err != nil {
		db.Close()
		wdb.Close()
		return nil, fmt.Errorf("task store %s is unreachable: %s", name, scrub(err, pw))
	}
	s := newStore(db, wdb, postgres, name, opts)
	s.pg = &pgInstance{cfg: cfg, pw: pw}
	return s.start(ctx)
}

// writeSettings are the write connection's session settings. A replica that hangs
// (SIGSTOP, a stalled VM) in the middle of a write transaction would hold the write
// lock, and every replica's writes with it: its session is ended after 10 s idle in
// the transaction, and a write waits for the lock at most busyTimeout, as on SQLite,
// and then fails with an error naming the store.
var writeSettings = map[string]string{
	"lock_timeout":                        fmt.Sprintf("%dms", busyTimeout.Milliseconds()),
	"idle_in_transaction_session_timeout": fmt.Sprintf("%dms", busyTimeout.Milliseconds()),
}

// Redact returns dsn with its password (in the URL's user part or a password
// parameter) replaced by xxxxx, for errors and logs.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	dsn = userPassword.ReplaceAllString(dsn, "${1}xxxxx@")
	return passwordParam.ReplaceAllString(dsn, "${1}xxxxx")
}

var (
	userPassword  = regexp.MustCompile(`(://[^:/@?]*:)[^@]*@`)
	passwordParam = regexp.MustCompile(`((?:^|[?&\s])password=)[^&\s]*`)
)

// password is dsn's password, to scrub it from a driver's errors.
func password(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		if pw, has := u.User.Password(); has {
			return pw
		}
		return u.Query().Get("password")
	}
	if m := regexp.MustCompile(`://[^:/@?]*:([^@]*)@`).FindStringSubmatch(dsn); m != nil {
		return m[1]
	}
	return ""
}

// scrub is err's text without pw.
func scrub(err error, pw string) string {
	msg := err.Error()
	if len(pw) >= 3 {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// pgInstance is a PostgreSQL instance's own connection: it holds the session advisory
// lock that says the instance lives, and LISTENs on the instance's channel. One
// goroutine (listen) owns it.
type pgInstance struct {
	cfg  *pgx.ConnConfig
	pw   string
	conn *pgx.Conn
	key  int32
	wake chan struct{} // gets a value when a NOTIFY came (cap 1)

	cancel context.CancelFunc
	done   chan struct{}
}

// instanceLockSpace is the first key of the session advisory locks instances hold
// (the second is lockKey of the instance's ID). The write lock, writeLockKey, is a
// one-key lock: PostgreSQL keeps the two forms apart.
const instanceLockSpace int32 = 0x6d637768 // "mcwh"

// lockKey is the second key of instance id's session lock.
func lockKey(id string) int32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int32(h.Sum32() & 0x7fffffff)
}

// channel is the NOTIFY channel of instance id (an ID is hex: a plain identifier).
func channel(id string) string { return "mcpwh_" + id }

// registerPG connects the instance's own connection, takes its session lock (a new
// ID if another instance's hashes to the same key) and LISTENs on its channel.
func (s *Store) registerPG(ctx context.Context) error {
	p := s.pg
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, p.cfg.Copy())
	if err != nil {
		return fmt.Errorf("task store %s is unreachable: %s", s.name, scrub(err, p.pw))
	}
	for range 8 {
		s.id = newInstanceID()
		if err = lockAndListen(cctx, conn, s.id); err == nil || !errors.Is(err, errLockTaken) {
			break
		}
	}
	if err != nil {
		conn.Close(context.Background())
		return fmt.Errorf("task store %s: instance lock: %s", s.name, scrub(err, p.pw))
	}
	p.conn, p.key, p.wake, p.done = conn, lockKey(s.id), make(chan struct{}, 1), make(chan struct{})
	lctx, lcancel := context.WithCancel(context.Background())
	p.cancel = lcancel
	go s.listen(lctx)
	return nil
}

var errLockTaken = errors.New("the instance lock is held by another session")

func lockAndListen(ctx context.Context, conn *pgx.Conn, id string) error {
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, instanceLockSpace, lockKey(id)).Scan(&got); err != nil {
		return err
	}
	if !got {
		return errLockTaken
	}
	_, err := conn.Exec(ctx, `LISTEN `+channel(id))
	return err
}

// listen waits for notifications on the instance's connection and wakes the
// Manager, until Close. A lost connection is made again (the lock and LISTEN with
// it) every second; meanwhile other instances may take this one for gone, and its
// lease renewal registers it again.
func (s *Store) listen(ctx context.Context) {
	p := s.pg
	defer close(p.done)
	for {
		_, err := p.conn.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			select {
			case p.wake <- struct{}{}:
			default:
			}
			continue
		}
		s.logger.Error("task store instance connection lost; reconnecting", "store", s.name, "err", scrub(err, p.pw))
		p.conn.Close(context.Background())
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			cctx, cancel := context.WithTimeout(ctx, connectTimeout)
			conn, err := pgx.ConnectConfig(cctx, p.cfg.Copy())
			if err == nil {
				if err = lockAndListen(cctx, conn, s.id); err != nil {
					conn.Close(context.Background())
				}
			}
			cancel()
			if err == nil {
				p.conn = conn
				break
			}
		}
		select { // signals may have come meanwhile
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// closeInstance ends the instance's own connection (and so its lock).
func (s *Store) closeInstance() {
	if s.pg == nil || s.pg.conn == nil {
		return
	}
	s.pg.cancel()
	<-s.pg.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.pg.conn.Close(ctx)
}

// Wake returns a channel that gets a value when signals were sent to this instance:
// on PostgreSQL, the NOTIFY that each Send makes in its transaction. On SQLite it is
// nil, and the Manager polls.
func (s *Store) Wake() <-chan struct{} {
	if s.pg == nil {
		return nil
	}
	return s.pg.wake
}

// lockedInstances returns the second keys of the instance locks held in this
// database: the instances whose session lives.
func (s *Store) lockedInstances(ctx context.Context) (map[int32]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT objid::bigint FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND classid = $1::bigint::oid
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, int64(instanceLockSpace))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := map[int32]bool{}
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		held[int32(k)] = true
	}
	return held, rows.Err()
}

// notify sends the NOTIFY that wakes instance id, in tx: it goes out when tx commits.
func (s *Store) notify(ctx context.Context, tx *sql.Tx, id string) error {
	if s.pg == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, '')`, channel(id))
	return err
}

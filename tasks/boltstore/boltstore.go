package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// Buckets: the tasks themselves, and two indexes whose keys sort as the store needs.
var (
	bucketTasks  = []byte("tasks")  // ID -> record (JSON)
	bucketOwners = []byte("owners") // owner \x00 createdAt(8) ID -> nothing: List order
	bucketExpiry = []byte("expiry") // expiresAt(8) ID -> nothing: terminal tasks only
)

// RestartMessage is the status message of a task that was running when the server
// stopped: its work was lost with the process.
const RestartMessage = "the server restarted while this task was running; its work was lost (run it again)"

// lockTimeout is how long Open waits for another process to release the file.
const lockTimeout = time.Second

// Store is a tasks.Store in a bbolt file. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string

	mu    sync.Mutex // guards the counters
	count int
	bytes int64
}

var _ tasks.Store = (*Store)(nil)

// Open opens (creating if needed) the store at path. Tasks that were unfinished in it
// (the server died while they ran) are marked failed with RestartMessage. A file that
// is locked by another process, corrupt or unreadable is an error naming the file;
// nothing is reset or deleted.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("task store %s: %w", path, err)
	}
	if err := precheck(path); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
		return err
	})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, lockedError(path)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return nil, corruptError(path, err)
	case err != nil && db == nil && errors.Is(err, errPanicked):
		// bbolt failed midway: its file stays open (and locked) until the process ends.
		return nil, corruptError(path, err)
	case err != nil:
		return nil, fmt.Errorf("task store %s: %w", path, err)
	}
	// A Batch waits this long for other writers to share its commit (and its fsync).
	// bbolt's 10 ms default would add 10 ms to every lone write.
	db.MaxBatchDelay = 200 * time.Microsecond
	s := &Store{db: db, path: path}
	if err := guard(s.recover); err != nil {
		db.Close()
		return nil, corruptError(path, err)
	}
	return s, nil
}

func lockedError(path string) error {
	return fmt.Errorf("task store %s is locked by another process (is another mcp-wasmhost using the same data_dir?)", path)
}

func corruptError(path string, err error) error {
	return fmt.Errorf("task store %s is corrupt or not a task store (%v); move it away to start with an empty store", path, err)
}

// precheck checks an existing store file with checkFile before bbolt maps it, under a
// shared lock so that a store another process is writing is reported as locked.
func precheck(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("task store %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("task store %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("task store %s is not a regular file (%s)", path, info.Mode().Type())
	}
	deadline := time.Now().Add(lockTimeout)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("task store %s: lock: %w", path, err)
		}
		if time.Now().After(deadline) {
			return lockedError(path)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Closing f releases the lock.
	if err := checkFile(f, info.Size()); err != nil {
		return corruptError(path, err)
	}
	return nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Path returns the store's file.
func (s *Store) Path() string { return s.path }

// recover creates the buckets, fails the tasks the last process left unfinished, and
// counts what is stored.
func (s *Store) recover() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketTasks, bucketOwners, bucketExpiry} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		// Read the indexes through before changing anything: a damaged page is found
		// now, under guard, and not by a later call.
		for _, name := range [][]byte{bucketOwners, bucketExpiry} {
			if err := tx.Bucket(name).ForEach(func(k, v []byte) error { return nil }); err != nil {
				return err
			}
		}
		b := tx.Bucket(bucketTasks)
		now := time.Now().UTC()
		var lost []tasks.Task
		s.count, s.bytes = 0, 0
		err := b.ForEach(func(k, v []byte) error {
			t, err := decode(v)
			if err != nil {
				return fmt.Errorf("task %q: %w", k, err)
			}
			if !t.Status.Terminal() {
				t.Status, t.StatusMessage = tasks.Failed, RestartMessage
				t.LastUpdatedAt, t.FinishedAt = now, now
				lost = append(lost, t)
			}
			s.count++
			s.bytes += tasks.Size(t)
			return nil
		})
		if err != nil {
			return err
		}
		for _, t := range lost {
			if err := put(tx, t, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// record is a task as stored. The result and error data are kept as bytes (base64 in
// the JSON), so that they come back exactly as they went in.
type record struct {
	ID            string        `json:"id"`
	Owner         string        `json:"owner"`
	Status        tasks.Status  `json:"status"`
	StatusMessage string        `json:"statusMessage,omitempty"`
	CreatedAt     time.Time     `json:"createdAt"`
	LastUpdatedAt time.Time     `json:"lastUpdatedAt"`
	FinishedAt    time.Time     `json:"finishedAt,omitzero"`
	TTL           time.Duration `json:"ttl"`
	PollInterval  time.Duration `json:"pollInterval"`
	Result        []byte        `json:"result,omitempty"`
	ErrorCode     int64         `json:"errorCode,omitempty"`
	ErrorMessage  string        `json:"errorMessage,omitempty"`
	ErrorData     []byte        `json:"errorData,omitempty"`
	HasError      bool          `json:"hasError,omitempty"`
}

func encode(t tasks.Task) ([]byte, error) {
	r := record{ID: t.ID, Owner: t.Owner, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, FinishedAt: t.FinishedAt,
		TTL: t.TTL, PollInterval: t.PollInterval, Result: t.Result}
	if t.Error != nil {
		r.HasError, r.ErrorCode, r.ErrorMessage, r.ErrorData = true, t.Error.Code, t.Error.Message, t.Error.Data
	}
	return json.Marshal(r)
}

func decode(v []byte) (tasks.Task, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return tasks.Task{}, err
	}
	t := tasks.Task{ID: r.ID, Owner: r.Owner, Status: r.Status, StatusMessage: r.StatusMessage,
		CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, FinishedAt: r.FinishedAt,
		TTL: r.TTL, PollInterval: r.PollInterval, Result: r.Result}
	if r.HasError {
		t.Error = &tasks.Error{Code: r.ErrorCode, Message: r.ErrorMessage, Data: r.ErrorData}
	}
	return t, nil
}

func ownerKey(t tasks.Task) []byte {
	k := make([]byte, 0, len(t.Owner)+1+8+len(t.ID))
	k = append(k, t.Owner...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(t.CreatedAt.UnixNano()))
	return append(k, t.ID...)
}

func expiryKey(t tasks.Task) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(tasks.ExpiresAt(t).UnixNano()))
	return append(k, t.ID...)
}

// put writes t and its index entries; old is the task it replaces, if any.
func put(tx *bolt.Tx, t tasks.Task, old *tasks.Task) error {
	v, err := encode(t)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketTasks).Put([]byte(t.ID), v); err != nil {
		return err
	}
	if old == nil {
		if err := tx.Bucket(bucketOwners).Put(ownerKey(t), nil); err != nil {
			return err
		}
	} else if old.Status.Terminal() {
		if err := tx.Bucket(bucketExpiry).Delete(expiryKey(*old)); err != nil {
			return err
		}
	}
	if t.Status.Terminal() {
		return tx.Bucket(bucketExpiry).Put(expiryKey(t), nil)
	}
	return nil
}

func get(tx *bolt.Tx, id string) (tasks.Task, bool, error) {
	v := tx.Bucket(bucketTasks).Get([]byte(id))
	if v == nil {
		return tasks.Task{}, false, nil
	}
	t, err := decode(v)
	return t, err == nil, err
}

// Put stores t durably (the file is synced before Put returns). Concurrent Puts are
// committed together.
func (s *Store) Put(_ context.Context, t tasks.Task) error {
	var delta int64
	var added bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		old, exists, err := get(tx, t.ID)
		if err != nil {
			return err
		}
		var oldp *tasks.Task
		delta, added = tasks.Size(t), !exists
		if exists {
			oldp = &old
			delta -= tasks.Size(old)
		}
		return put(tx, t, oldp)
	})
	if err != nil {
		return fmt.Errorf("task store %s: %w", s.path, err)
	}
	s.mu.Lock()
	s.bytes += delta
	if added {
		s.count++
	}
	s.mu.Unlock()
	return nil
}

func (s *Store) Get(_ context.Context, id string) (tasks.Task, error) {
	var t tasks.Task
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		t, ok, err = get(tx, id)
		return err
	})
	if err != nil {
		return tasks.Task{}, fmt.Errorf("task store %s: %w", s.path, err)
	}
	if !ok {
		return tasks.Task{}, tasks.ErrNotFound
	}
	return t, nil
}

func (s *Store) List(_ context.Context, owner, after string, limit int) ([]tasks.Task, error) {
	var out []tasks.Task
	err := s.db.View(func(tx *bolt.Tx) error {
		prefix := append([]byte(owner), 0)
		c := tx.Bucket(bucketOwners).Cursor()
		k, _ := c.Seek(prefix)
		if after != "" {
			t, ok, err := get(tx, after)
			if err != nil {
				return err
			}
			if !ok || t.Owner != owner {
				return tasks.ErrBadCursor
			}
			start := ownerKey(t)
			k, _ = c.Seek(start)
			if bytes.Equal(k, start) {
				k, _ = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Next() {
			id := string(k[len(prefix)+8:])
			t, ok, err := get(tx, id)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, t)
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) Delete(_ context.Context, id string) error {
	var size int64
	var removed bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		t, ok, err := get(tx, id)
		if err != nil || !ok {
			return err
		}
		if err := tx.Bucket(bucketTasks).Delete([]byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOwners).Delete(ownerKey(t)); err != nil {
			return err
		}
		if t.Status.Terminal() {
			if err := tx.Bucket(bucketExpiry).Delete(expiryKey(t)); err != nil {
				return err
			}
		}
		size, removed = tasks.Size(t), true
		return nil
	})
	if err != nil {
		return fmt.Errorf("task store %s: %w", s.path, err)
	}
	if removed {
		s.mu.Lock()
		s.count--
		s.bytes -= size
		s.mu.Unlock()
	}
	return nil
}

func (s *Store) Expired(_ context.Context, now time.Time) ([]string, error) {
	var ids []string
	limit := uint64(now.UnixNano())
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExpiry).Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k[:8]) < limit; k, _ = c.Next() {
			ids = append(ids, string(k[8:]))
		}
		return nil
	})
	return ids, err
}

func (s *Store) Stats(context.Context) (tasks.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return tasks.Stats{Tasks: s.count, Bytes: s.bytes}, nil
}

// Purge deletes up to limit expired tasks in one transaction: one commit and one
// fsync for the batch. The pages they free are reused for new tasks; the file does
// not shrink (bbolt never shrinks a file in place; see the package doc).
func (s *Store) Purge(_ context.Context, now time.Time, limit int) (int, error) {
	var n int
	var size int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		n, size = 0, 0
		until := uint64(now.UnixNano())
		var keys [][]byte
		c := tx.Bucket(bucketExpiry).Cursor()
		for k, _ := c.First(); k != nil && len(keys) < limit && binary.BigEndian.Uint64(k[:8]) < until; k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			id := k[8:]
			t, ok, err := get(tx, string(id))
			if err != nil {
				return err
			}
			if err := tx.Bucket(bucketExpiry).Delete(k); err != nil {
				return err
			}
			if !ok {
				continue // an index entry left without its task
			}
			if err := tx.Bucket(bucketTasks).Delete(id); err != nil {
				return err
			}
			if err := tx.Bucket(bucketOwners).Delete(ownerKey(t)); err != nil {
				return err
			}
			n++
			size += tasks.Size(t)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("task store %s: purge: %w", s.path, err)
	}
	s.mu.Lock()
	s.count -= n
	s.bytes -= size
	s.mu.Unlock()
	return n, nil
}

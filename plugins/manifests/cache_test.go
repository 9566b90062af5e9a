package manifests

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testHost = "go-build-id:test"

var testKey = Key{WasmSHA256: strings.Repeat("ab", 32), ABI: 1, MemoryMiB: 64, Timeout: 30 * time.Second,
	Env: map[string]string{"A": "1", "B": "2"}}

const testManifest = `{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`

func open(t *testing.T, logs *bytes.Buffer) *Cache {
	t.Helper()
	var logger *slog.Logger
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	c, err := Open(Options{Dir: filepath.Join(t.TempDir(), "manifests"), Host: testHost, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPutGet(t *testing.T) {
	c := open(t, nil)
	if _, ok := c.Get(testKey); ok {
		t.Fatal("Get(empty cache) = hit, want a miss")
	}
	c.Put(testKey, []byte(testManifest))
	got, ok := c.Get(testKey)
	if !ok || string(got) != testManifest {
		t.Fatalf("Get = %q, %v, want %q, true", got, ok, testManifest)
	}
	info, err := os.Stat(c.path(testKey.digest(testHost)))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("entry mode %v, want 0600", perm)
	}
	if info, err := os.Stat(c.dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v (%v), want 0700", info.Mode().Perm(), err)
	}
	b, _ := os.ReadFile(c.path(testKey.digest(testHost)))
	if bytes.Contains(b, []byte(`"A"`)) {
		t.Errorf("entry %s holds the environment, want only its digest", b)
	}
	if names, _ := filepath.Glob(filepath.Join(c.dir, ".tmp-*")); len(names) > 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

// Every part of the key, and the host, decides the entry: a change is a miss.
func TestKeyParts(t *testing.T) {
	c := open(t, nil)
	c.Put(testKey, []byte(testManifest))
	for _, tc := range []struct {
		name string
		edit func(*Key)
	}{
		{"module", func(k *Key) { k.WasmSHA256 = strings.Repeat("cd", 32) }},
		{"abi", func(k *Key) { k.ABI = 2 }},
		{"memory", func(k *Key) { k.MemoryMiB = 32 }},
		{"timeout", func(k *Key) { k.Timeout = time.Second }},
		{"env value", func(k *Key) { k.Env = map[string]string{"A": "1", "B": "3"} }},
		{"env name", func(k *Key) { k.Env = map[string]string{"A": "1", "C": "2"} }},
		{"no env", func(k *Key) { k.Env = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := testKey
			tc.edit(&k)
			if _, ok := c.Get(k); ok {
				t.Errorf("Get(%+v) = hit, want a miss", k)
			}
		})
	}
	other := *c
	other.host = "go-build-id:other"
	if _, ok := other.Get(testKey); ok {
		t.Error("Get from another host's build = hit, want a miss")
	}
	if _, ok := c.Get(testKey); !ok {
		t.Error("Get(same key) = miss, want a hit")
	}
}

// A damaged or hostile entry is a miss, logged; Put then replaces it.
func TestHostileEntries(t *testing.T) {
	good := func(c *Cache) []byte {
		c.Put(testKey, []byte(testManifest))
		b, err := os.ReadFile(c.path(testKey.digest(testHost)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	edit := func(b []byte, f func(map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return out
	}
	for _, tc := range []struct {
		name string
		make func(c *Cache, path string) // replaces the good entry at path
		want string                      // in the log
	}{
		{"truncated", func(c *Cache, path string) { b := good(c); os.WriteFile(path, b[:len(b)/2], 0o600) }, "malformed"},
		{"empty", func(c *Cache, path string) { os.WriteFile(path, nil, 0o600) }, "malformed"},
		{"not JSON", func(c *Cache, path string) { os.WriteFile(path, []byte("\x00\xff garbage"), 0o600) }, "malformed"},
		{"unknown field", func(c *Cache, path string) {
			os.WriteFile(path, edit(good(c), func(m map[string]any) { m["trusted"] = true }), 0o600)
		}, "unknown field"},
		{"trailing data", func(c *Cache, path string) { os.WriteFile(path, append(good(c), "{}"...), 0o600) }, "data after"},
		{"other format", func(c *Cache, path string) {
			os.WriteFile(path, edit(good(c), func(m map[string]any) { m["format"] = 2 }), 0o600)
		}, "format 2"},
		{"other key", func(c *Cache, path string) {
			os.WriteFile(path, edit(good(c), func(m map[string]any) { m["key"] = strings.Repeat("0", 64) }), 0o600)
		}, "entry of key"},
		{"other module", func(c *Cache, path string) {
			os.WriteFile(path, edit(good(c), func(m map[string]any) { m["wasmSHA256"] = strings.Repeat("0", 64) }), 0o600)
		}, "describes module"},
		{"manifest changed", func(c *Cache, path string) {
			os.WriteFile(path, edit(good(c), func(m map[string]any) { m["manifest"] = []byte(`{"tools":[]}`) }), 0o600)
		}, "does not match its sha256"},
		{"no manifest", func(c *Cache, path string) {
			os.WriteFile(path, edit(good(c), func(m map[string]any) { delete(m, "manifest") }), 0o600)
		}, "manifest of 0 bytes"},
		{"too large", func(c *Cache, path string) {
			os.WriteFile(path, append(good(c), bytes.Repeat([]byte(" "), MaxEntryBytes)...), 0o600)
		}, "more than"},
		{"directory", func(c *Cache, path string) { os.Mkdir(path, 0o700) }, "not a regular file"},
		{"symlink", func(c *Cache, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			os.WriteFile(target, good(c), 0o600)
			os.Remove(path)
			os.Symlink(target, path)
		}, "not a regular file"},
		{"fifo", func(c *Cache, path string) {
			if err := mkfifo(path); err != nil {
				t.Skip(err)
			}
		}, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := open(t, &logs)
			path := c.path(testKey.digest(testHost))
			os.Remove(path)
			tc.make(c, path)
			if got, ok := c.Get(testKey); ok {
				t.Fatalf("Get = %q, hit, want a miss", got)
			}
			if !strings.Contains(logs.String(), "entry ignored") || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("log = %q, want the entry ignored: %s", logs.String(), tc.want)
			}
			if info, err := os.Lstat(path); err == nil && info.IsDir() {
				os.Remove(path)
			}
			c.Put(testKey, []byte(testManifest))
			if got, ok := c.Get(testKey); !ok || string(got) != testManifest {
				t.Errorf("after Put: Get = %q, %v, want the manifest", got, ok)
			}
		})
	}
}

// An entry copied to another module's name (the file name of that module's key) is
// not that module's.
func TestEntryUnderAnotherName(t *testing.T) {
	var logs bytes.Buffer
	c := open(t, &logs)
	c.Put(testKey, []byte(testManifest))
	other := testKey
	other.WasmSHA256 = strings.Repeat("cd", 32)
	b, _ := os.ReadFile(c.path(testKey.digest(testHost)))
	if err := os.WriteFile(c.path(other.digest(testHost)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Get(other); ok {
		t.Fatalf("Get(other module) = %q, hit, want a miss", got)
	}
	if !strings.Contains(logs.String(), "entry of key") {
		t.Errorf("log = %q, want the mismatch named", logs.String())
	}
}

func TestDrop(t *testing.T) {
	var logs bytes.Buffer
	c := open(t, &logs)
	c.Put(testKey, []byte(testManifest))
	c.Drop(testKey, os.ErrInvalid)
	if _, ok := c.Get(testKey); ok {
		t.Error("Get after Drop = hit, want a miss")
	}
	if !strings.Contains(logs.String(), "entry refused") {
		t.Errorf("log = %q, want the refusal", logs.String())
	}
}

func TestPutRefusesOversize(t *testing.T) {
	c := open(t, nil)
	c.Put(testKey, bytes.Repeat([]byte(" "), MaxManifestBytes+1))
	c.Put(testKey, nil)
	if _, ok := c.Get(testKey); ok {
		t.Error("Get after oversized Put = hit, want a miss")
	}
	// The largest manifest fits in an entry.
	big := append([]byte(`"`), bytes.Repeat([]byte("x"), MaxManifestBytes-2)...)
	big = append(big, '"')
	c.Put(testKey, big)
	if got, ok := c.Get(testKey); !ok || len(got) != MaxManifestBytes {
		t.Errorf("Get(largest manifest) = %d bytes, %v, want %d, true", len(got), ok, MaxManifestBytes)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no dir", Options{Host: testHost}, "required"},
		{"no host", Options{Dir: filepath.Join(dir, "m")}, "required"},
		{"writable by others", Options{Dir: shared, Host: testHost}, "lets others write"},
		{"a file", Options{Dir: file, Host: testHost}, "manifest cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Open(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
			}
		})
	}
}

func TestHostID(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := HostID(exe)
	if err != nil || !strings.HasPrefix(a, "go-build-id:") {
		t.Fatalf("HostID(this test) = %q, %v, want its Go build ID", a, err)
	}
	if b, _ := HostID(exe); a != b {
		t.Errorf("HostID twice = %q, %q, want the same", a, b)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(plain, []byte("not an executable"), 0o600)
	if id, err := HostID(plain); err != nil || !strings.HasPrefix(id, "sha256:") {
		t.Errorf("HostID(non-ELF) = %q, %v, want the file's sha256", id, err)
	}
	if _, err := HostID(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("HostID(missing) = nil error")
	}
}

// Open removes entries and temporary files no start has used for MaxAge; a hit counts
// as a use. Other files are left alone.
func TestPrune(t *testing.T) {
	c := open(t, nil)
	used, unused := testKey, testKey
	unused.MemoryMiB = 32
	c.Put(used, []byte(testManifest))
	c.Put(unused, []byte(testManifest))
	tmp := filepath.Join(c.dir, ".tmp-123")
	other := filepath.Join(c.dir, "README")
	for _, p := range []string{tmp, other} {
		os.WriteFile(p, nil, 0o600)
	}
	old := time.Now().Add(-MaxAge - time.Hour)
	for _, p := range []string{c.path(used.digest(testHost)), c.path(unused.digest(testHost)), tmp, other} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.Get(used); !ok {
		t.Fatal("Get(used) = miss")
	}
	again, err := Open(Options{Dir: c.dir, Host: testHost})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get(used); !ok {
		t.Error("entry used recently: pruned, want kept")
	}
	if _, ok := again.Get(unused); ok {
		t.Error("entry unused for MaxAge: kept, want pruned")
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Error("old temporary file kept, want pruned")
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("file not ours: %v, want it left alone", err)
	}
}

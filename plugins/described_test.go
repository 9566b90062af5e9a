package plugins_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/manifests"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// describedCache opens a manifest cache in a new directory for this test binary, and
// returns it with its directory and the log it writes.
func describedCache(t *testing.T) (*manifests.Cache, string, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host, err := manifests.HostID(exe)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "manifests")
	logs := &bytes.Buffer{}
	c, err := manifests.Open(manifests.Options{Dir: dir, Host: host, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c, dir, logs
}

func toolNames(p *plugins.Plugin) string {
	var names []string
	for _, t := range p.Tools {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

// entries returns the cache's entry files.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A warm start reads the manifest from the cache and runs none of the module's code:
// no instance in process, and in a worker only the worker's own start. The plugin
// offers the same tools as when it was described.
func TestDescribedLoadRunsNothing(t *testing.T) {
	for _, mode := range []string{"trusted", "worker"} {
		t.Run(mode, func(t *testing.T) {
			c, dir, logs := describedCache(t)
			e := testenv.Engine(t)
			spec := testenv.Spec(t, "toolbox", "plugins/toolbox/toolbox.wasm")
			spec.Manifests = c
			if mode == "worker" {
				sup, err := worker.NewSupervisor(worker.Options{CacheDir: testenv.CacheDir()})
				if err != nil {
					t.Fatal(err)
				}
				spec.Workers = sup
				spec.Processes = 1
			}
			cold := testenv.Load(t, e, spec)
			if got := len(entries(t, dir)); got != 1 {
				t.Fatalf("after the first load: %d entries, want 1", got)
			}
			if mode == "trusted" && cold.Module.Instances() != 2 {
				t.Errorf("first load: %d instances, want 2 (version check and describe)", cold.Module.Instances())
			}
			warm := testenv.Load(t, e, spec)
			if n := warm.Module.Instances(); n != 0 {
				t.Errorf("warm load: %d instances, want 0", n)
			}
			if got, want := toolNames(warm), toolNames(cold); got != want || got == "" {
				t.Errorf("warm load offers %q, want %q", got, want)
			}
			// The module still runs: a call works.
			out, err := warm.Module.Call(context.Background(), []byte(`{"tool":"json_format","arguments":{"json":"[1]"}}`), nil)
			if err != nil || len(out) == 0 {
				t.Errorf("Call after a warm load = %q, %v", out, err)
			}
			if logs.Len() != 0 {
				t.Errorf("cache log = %q, want nothing", logs.String())
			}
		})
	}
}

// An entry that is damaged is ignored (and logged), the plugin is described, and the
// entry is replaced by a good one.
func TestDamagedEntryReplaced(t *testing.T) {
	c, dir, logs := describedCache(t)
	e := testenv.Engine(t)
	spec := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm")
	spec.Manifests = c
	want := toolNames(testenv.Load(t, e, spec))
	names := entries(t, dir)
	if len(names) != 1 {
		t.Fatalf("%d entries, want 1", len(names))
	}
	good, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(names[0], good[:len(good)-10], 0o600); err != nil {
		t.Fatal(err)
	}
	p := testenv.Load(t, e, spec)
	if p.Module.Instances() != 2 || toolNames(p) != want {
		t.Errorf("load on a damaged entry: %d instances, tools %q; want 2 (described again) and %q", p.Module.Instances(), toolNames(p), want)
	}
	if !strings.Contains(logs.String(), "entry ignored") {
		t.Errorf("log = %q, want the damaged entry reported", logs.String())
	}
	if now, _ := os.ReadFile(names[0]); !bytes.Equal(now, good) {
		t.Errorf("entry after the load = %q, want it replaced by the good one", now)
	}
	if p := testenv.Load(t, e, spec); p.Module.Instances() != 0 {
		t.Errorf("next load: %d instances, want 0 (the replaced entry)", p.Module.Instances())
	}
}

// A well-formed entry whose manifest the host refuses (forged with every name right)
// is dropped: the module is described instead.
func TestRefusedManifestDescribed(t *testing.T) {
	c, _, logs := describedCache(t)
	spec := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm")
	spec.Manifests = c
	c.Put(key(t, spec), []byte(`{"tools":[{"name":"bad name!"}]}`))
	p := testenv.Load(t, testenv.Engine(t), spec)
	if p.Module.Instances() != 2 || !strings.HasPrefix(toolNames(p), "textkit_") {
		t.Errorf("load: %d instances, tools %q; want 2 and textkit's own", p.Module.Instances(), toolNames(p))
	}
	if !strings.Contains(logs.String(), "entry refused") {
		t.Errorf("log = %q, want the refused entry reported", logs.String())
	}
}

// key is the cache key plugins.Load uses for spec.
func key(t *testing.T, spec plugins.Spec) manifests.Key {
	t.Helper()
	b, err := os.ReadFile(spec.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	l := spec.Limits.WithDefaults()
	return manifests.Key{WasmSHA256: hex.EncodeToString(sum[:]), ABI: sandbox.ABIVersion, MemoryMiB: l.MemoryMiB,
		Timeout: l.Timeout, Env: spec.Grants.Env}
}

// An entry of one module copied to the name of another module's entry is not
// trusted: the other module is described, and offers its own tools.
func TestForgedEntryName(t *testing.T) {
	c, dir, logs := describedCache(t)
	e := testenv.Engine(t)
	tb := testenv.Spec(t, "toolbox", "plugins/toolbox/toolbox.wasm")
	tb.Manifests = c
	testenv.Load(t, e, tb)
	tbEntry := entries(t, dir)[0]
	tk := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm")
	tk.Manifests = c
	want := toolNames(testenv.Load(t, e, tk))
	var tkEntry string
	for _, n := range entries(t, dir) {
		if n != tbEntry {
			tkEntry = n
		}
	}
	b, err := os.ReadFile(tbEntry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tkEntry, b, 0o600); err != nil { // toolbox's manifest under textkit's name
		t.Fatal(err)
	}
	p := testenv.Load(t, e, tk)
	if got := toolNames(p); got != want || p.Module.Instances() != 2 {
		t.Errorf("load on a forged entry: tools %q, %d instances; want %q, 2 (described)", got, p.Module.Instances(), want)
	}
	if !strings.Contains(logs.String(), "entry ignored") {
		t.Errorf("log = %q, want the forged entry reported", logs.String())
	}
}

// A module that does not load is refused whatever the cache says: the cache skips
// running a module, never compiling and checking it.
func TestBrokenModuleRefusedDespiteEntry(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"testdata/wasm/truncated.wasm", "is not a valid WebAssembly module"},
		{"testdata/wasm/missing_import.wasm", "imports"},
		{"testdata/wasm/command.wasm", "exports _start"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			c, _, _ := describedCache(t)
			spec := testenv.Spec(t, "broken", tc.path)
			spec.Manifests = c
			c.Put(key(t, spec), []byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`))
			p, err := plugins.Load(context.Background(), testenv.Engine(t), spec)
			if err == nil {
				p.Close(context.Background())
				t.Fatalf("Load(%s) with a cached manifest = ok, want refused", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load(%s) = %v, want %q", tc.path, err, tc.want)
			}
		})
	}
}

// Plugins with directory grants are described at every load: the describe may read
// the directories.
func TestDirGrantsNotCached(t *testing.T) {
	c, dir, _ := describedCache(t)
	spec := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm")
	spec.Manifests = c
	spec.Grants.Dirs = []sandbox.Dir{{Host: t.TempDir(), Guest: "/data"}}
	e := testenv.Engine(t)
	testenv.Load(t, e, spec)
	if p := testenv.Load(t, e, spec); p.Module.Instances() != 2 || len(entries(t, dir)) != 0 {
		t.Errorf("second load: %d instances, %d entries; want 2, 0", p.Module.Instances(), len(entries(t, dir)))
	}
}

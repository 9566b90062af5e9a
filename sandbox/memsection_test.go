package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
)

// wazeroMin is the initial memory wazero reads from a module it compiles; ok is
// false when wazero refuses the module or it exports no memory.
func wazeroMin(t testing.TB, wasm []byte) (uint32, bool) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return 0, false
	}
	for _, m := range cm.ExportedMemories() {
		return m.Min(), true
	}
	return 0, false
}

// TestInitialMemory reads the initial memory of every module in testdata and the
// bundled plugins as wazero does.
func TestInitialMemory(t *testing.T) {
	files, _ := filepath.Glob("../testdata/wasm/*.wasm")
	more, _ := filepath.Glob("../plugins/*/*.wasm")
	files = append(files, more...)
	checked := 0
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := wazeroMin(t, wasm)
		if !ok {
			continue
		}
		got, found, err := initialMemory(wasm)
		if err != nil || !found || got != want {
			t.Errorf("initialMemory(%s) = %d, %v, %v, want %d (wazero)", f, got, found, err, want)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked %d modules, want the testdata and bundled plugins", checked)
	}
}

// TestCheckInitialMemory: a limit below the module's initial memory names the
// memory_mib that holds it; a limit that holds it passes.
func TestCheckInitialMemory(t *testing.T) {
	mod := []byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x2e") // one memory, min 46 pages
	err := CheckInitialMemory("p", mod, 2)
	want := `plugin "p" starts with 46 pages (2944 KiB) of linear memory, over its memory limit of 2 MiB: raise memory_mib to at least 3`
	if err == nil || err.Error() != want {
		t.Errorf("CheckInitialMemory(46 pages, 2 MiB) = %v, want %s", err, want)
	}
	if err := CheckInitialMemory("p", mod, 3); err != nil {
		t.Errorf("CheckInitialMemory(46 pages, 3 MiB) = %v, want nil", err)
	}
}

// FuzzInitialMemory feeds untrusted bytes to the memory section reader: it must not
// panic, and it must agree with wazero on the seeds, which wazero compiles. (Comparing
// with wazero on every input stalls the fuzzer: wazero takes minutes on some
// malformed modules; TestInitialMemory compares on every real module.)
func FuzzInitialMemory(f *testing.F) {
	var seeds [][]byte
	for _, p := range []string{"memgrow", "memhog", "asker", "tablebomb"} {
		b, err := os.ReadFile("../testdata/wasm/" + p + ".wasm")
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	seeds = append(seeds, []byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x2e"), []byte("\x00asm\x01\x00\x00\x00\x05\x02\x01\x01"))
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		got, found, err := initialMemory(wasm) // must not panic
		for _, s := range seeds {
			if string(s) != string(wasm) {
				continue
			}
			if want, ok := wazeroMin(t, wasm); ok && (err != nil || !found || got != want) {
				t.Fatalf("initialMemory = %d, %v, %v; wazero compiled it with min %d", got, found, err, want)
			}
		}
	})
}

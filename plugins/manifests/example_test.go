package manifests_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/manifests"
)

// A server keeps its plugins' manifests beside the compilation cache, under its own
// build's ID; a load that finds the key of its module skips running it.
func Example() {
	dir, _ := os.MkdirTemp("", "manifests-example")
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	host, _ := manifests.HostID(exe)
	c, err := manifests.Open(manifests.Options{Dir: filepath.Join(dir, "manifests"), Host: host})
	if err != nil {
		fmt.Println(err)
		return
	}
	key := manifests.Key{WasmSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		ABI: 1, MemoryMiB: 64, Timeout: 30 * time.Second}
	_, ok := c.Get(key)
	fmt.Println("first start, cached:", ok)
	c.Put(key, []byte(`{"tools":[]}`))
	doc, ok := c.Get(key)
	fmt.Println("next start, cached:", ok, string(doc))
	key.MemoryMiB = 128
	_, ok = c.Get(key)
	fmt.Println("another memory limit, cached:", ok)
	// Output:
	// first start, cached: false
	// next start, cached: true {"tools":[]}
	// another memory limit, cached: false
}

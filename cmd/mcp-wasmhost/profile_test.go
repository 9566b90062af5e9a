package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerProfileDir: with [server] worker_profile_dir the server's workers each
// write a CPU profile there, named by plugin and pid, when the server shuts down.
func TestWorkerProfileDir(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, strings.Replace(serverTOML(t), "[server]\n", fmt.Sprintf("[server]\nworker_profile_dir = %q\n", dir), 1)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cs, stderr := connectStdio(t, "--config", cfg)
	if got := callText(t, cs, "textkit_ping", map[string]any{}); got == "" {
		t.Fatal("textkit_ping answered nothing")
	}
	if err := cs.Close(); err != nil { // the server exits, closing its workers
		t.Fatalf("close: %v\nstderr:\n%s", err, stderr)
	}
	profiles, _ := filepath.Glob(filepath.Join(dir, "textkit-*.cpu.pprof"))
	if len(profiles) == 0 {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("no textkit-<pid>.cpu.pprof in the profile directory (it holds %v)\nstderr:\n%s", entries, stderr)
	}
	for _, p := range profiles {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("profile %s: %v, starts %x; want a gzip-compressed profile", p, err, b[:min(len(b), 2)])
		}
	}
}

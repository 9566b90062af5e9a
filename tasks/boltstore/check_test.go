package boltstore

import (
	"bytes"
	"os"
	"testing"
)

// FuzzCheckFile: checkFile reads any bytes without panicking or reading past them, and
// whatever it passes lies within the file: the high-water mark, the root and the
// freelist of the meta page bbolt will use.
func FuzzCheckFile(f *testing.F) {
	for _, n := range []int{0, 100, 4096, 8192, 16384} {
		f.Add(make([]byte, n))
	}
	path := f.TempDir() + "/tasks.db"
	s, err := Open(path)
	if err != nil {
		f.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range []int{len(b), 8192, 3 * 4096, len(b) / 2} {
		f.Add(b[:n])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = checkFile(bytes.NewReader(data), int64(len(data)))
	})
}

// TestCheckFileOnARealStore: a new store passes; a quarter of it does not.
func TestCheckFileOnARealStore(t *testing.T) {
	path := t.TempDir() + "/tasks.db"
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	b := readAll(t, path)
	if err := checkFile(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Errorf("checkFile(a new store) = %v", err)
	}
	if err := checkFile(bytes.NewReader(b[:len(b)/4]), int64(len(b)/4)); err == nil {
		t.Errorf("checkFile(a quarter of a new store) = nil, want an error")
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

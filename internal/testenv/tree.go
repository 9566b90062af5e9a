package testenv

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Tree records every entry under dir with its mode, size, time and contents.
func Tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(path)
			s += " " + string(b)
		}
		out[path] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SameTree fails t if anything under dir differs from before (a Tree).
func SameTree(t testing.TB, dir string, before map[string]string) {
	t.Helper()
	after := Tree(t, dir)
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s changed to %q, was %q", p, after[p], s)
		}
	}
	for p, s := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared: %q", p, s)
		}
	}
}

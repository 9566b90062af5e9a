package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

const secret = "top secret"

// escapeTree makes a granted directory and, beside it, a directory with a secret. The
// granted directory holds symlinks that stay inside and symlinks that lead out:
//
//	hello.txt, sub/inner.txt
//	link-in -> hello.txt, dirlink-in -> sub, sub/up -> ..
//	link-out -> <outside>/secret.txt, link-out-rel -> ../<outside>/secret.txt,
//	dirlink-out -> <outside>, dangling-out -> <outside>/missing.txt
type escapeTree struct {
	dir, outside string
	rel          string // the secret's path relative to dir: "../NNN/secret.txt"
}

func newEscapeTree(t *testing.T) escapeTree {
	t.Helper()
	tr := escapeTree{outside: t.TempDir(), dir: t.TempDir()}
	for path, text := range map[string]string{
		filepath.Join(tr.outside, "secret.txt"):       secret,
		filepath.Join(tr.outside, "docs", "more.txt"): secret,
		filepath.Join(tr.dir, "hello.txt"):            "hello",
		filepath.Join(tr.dir, "sub", "inner.txt"):     "inner",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if tr.rel, err = filepath.Rel(tr.dir, filepath.Join(tr.outside, "secret.txt")); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"link-in":      "hello.txt",
		"dirlink-in":   "sub",
		"sub/up":       "..",
		"link-out":     filepath.Join(tr.outside, "secret.txt"),
		"link-out-rel": tr.rel,
		"dirlink-out":  tr.outside,
		"dangling-out": filepath.Join(tr.outside, "missing.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(tr.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

type fsOp struct {
	Op     string `json:"op"`
	Path   string `json:"path"`
	Target string `json:"target,omitempty"`
	Data   string `json:"data,omitempty"`
	Offset int64  `json:"offset,omitempty"`
}

func (o fsOp) String() string {
	s := o.Op + " " + o.Path
	if o.Target != "" {
		s += " " + o.Target
	}
	return s
}

// runFS runs one operation in the escape guest and returns its text and whether the
// guest reported an error.
func runFS(t *testing.T, m *sandbox.Module, op fsOp) (string, bool) {
	t.Helper()
	out, err := m.Call(context.Background(), call("fs", op), nil)
	if err != nil {
		t.Fatalf("Call(%v) = %v", op, err)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("Call(%v) = %s: %v", op, out, err)
	}
	return res.Content[0].Text, res.IsError
}

// outcome is what a step should give: success with text, or an error containing text.
type outcome struct {
	ok   bool
	text string
}

// step is one operation in the guest and what it should give.
type step struct {
	op   fsOp
	want outcome
}

func gives(text string) outcome { return outcome{ok: true, text: text} }
func fails(text string) outcome { return outcome{text: text} }

func expect(t *testing.T, m *sandbox.Module, op fsOp, w outcome) {
	t.Helper()
	got, isErr := runFS(t, m, op)
	if strings.Contains(got, secret) {
		t.Errorf("Call(%v) = %q: the secret leaked", op, got)
	}
	switch {
	case w.ok && (isErr || got != w.text):
		t.Errorf("Call(%v) = %q (error %v), want %q", op, got, isErr, w.text)
	case !w.ok && (!isErr || !strings.Contains(got, w.text)):
		t.Errorf("Call(%v) = %q (error %v), want an error containing %q", op, got, isErr, w.text)
	}
}

const denied = "Operation not permitted" // EPERM, as a Go guest prints it

// TestMountEscapes runs the escape guest against a read-only and a writable grant whose
// directory holds symlinks that lead out: every way out fails, links that stay inside
// work, and nothing outside is read or changed.
func TestMountEscapes(t *testing.T) {
	for _, writable := range []bool{false, true} {
		t.Run(fmt.Sprintf("writable=%v", writable), func(t *testing.T) {
			tr := newEscapeTree(t)
			outsideBefore := testenv.Tree(t, tr.outside)
			m := load(t, "testdata/wasm/escape.wasm", sandbox.Limits{},
				sandbox.Grants{Dirs: []sandbox.Dir{{Host: tr.dir, Guest: "/data", Writable: writable}}})

			steps := []step{
				// Ordinary reading, and links that stay inside.
				{fsOp{Op: "read", Path: "/data/hello.txt"}, gives("hello")},
				{fsOp{Op: "seek", Path: "/data/hello.txt", Offset: 2}, gives("llo")},
				{fsOp{Op: "stat", Path: "/data/sub"}, gives("sub dir")},
				{fsOp{Op: "stat", Path: "/data/link-in"}, gives("link-in file 5")},
				{fsOp{Op: "list", Path: "/data/sub"}, gives("inner.txt up")},
				{fsOp{Op: "read", Path: "/data/link-in"}, gives("hello")},
				{fsOp{Op: "list", Path: "/data/dirlink-in"}, gives("inner.txt up")},
				{fsOp{Op: "read", Path: "/data/dirlink-in/inner.txt"}, gives("inner")},
				{fsOp{Op: "read", Path: "/data/sub/up/hello.txt"}, gives("hello")},
				{fsOp{Op: "rawread", Path: "sub/up/link-in"}, gives("hello")},
				// A link itself may be looked at, wherever it points.
				{fsOp{Op: "lstat", Path: "/data/link-out"}, gives(fmt.Sprintf("link-out symlink %d", len(filepath.Join(tr.outside, "secret.txt"))))},
				{fsOp{Op: "readlink", Path: "/data/link-out"}, gives(filepath.Join(tr.outside, "secret.txt"))},
				// Pre-existing links that lead out.
				{fsOp{Op: "read", Path: "/data/link-out"}, fails(denied)},
				{fsOp{Op: "read", Path: "/data/link-out-rel"}, fails(denied)},
				{fsOp{Op: "seek", Path: "/data/link-out", Offset: 1}, fails(denied)},
				{fsOp{Op: "stat", Path: "/data/link-out"}, fails(denied)},
				{fsOp{Op: "list", Path: "/data/dirlink-out"}, fails(denied)},
				{fsOp{Op: "read", Path: "/data/dirlink-out/secret.txt"}, fails(denied)},
				{fsOp{Op: "read", Path: "/data/dirlink-out/docs/more.txt"}, fails(denied)},
				{fsOp{Op: "stat", Path: "/data/dirlink-out/docs"}, fails(denied)},
				{fsOp{Op: "rawread", Path: "dirlink-in/up/link-out"}, fails(denied)},
				// "..": Go cleans it away before the host sees it, path_open gets it raw.
				{fsOp{Op: "read", Path: "/data/../" + filepath.Base(tr.outside) + "/secret.txt"}, fails("")},
				{fsOp{Op: "rawread", Path: tr.rel}, fails(denied)},
				{fsOp{Op: "rawread", Path: "sub/../../" + filepath.Base(tr.outside) + "/secret.txt"}, fails(denied)},
				{fsOp{Op: "rawread", Path: "sub/up/" + tr.rel}, fails("")},
			}
			if writable {
				steps = append(steps, []step{
					// No way to write out through a link.
					{fsOp{Op: "write", Path: "/data/link-out", Data: "pwned"}, fails(denied)},
					{fsOp{Op: "append", Path: "/data/link-out-rel", Data: "pwned"}, fails(denied)},
					{fsOp{Op: "write", Path: "/data/dangling-out", Data: "pwned"}, fails(denied)},
					{fsOp{Op: "write", Path: "/data/dirlink-out/new.txt", Data: "pwned"}, fails(denied)},
					{fsOp{Op: "mkdir", Path: "/data/dirlink-out/new"}, fails(denied)},
					{fsOp{Op: "remove", Path: "/data/dirlink-out/secret.txt"}, fails(denied)},
					{fsOp{Op: "rename", Path: "/data/dirlink-out/secret.txt", Target: "/data/stolen.txt"}, fails(denied)},
					{fsOp{Op: "rename", Path: "/data/hello.txt", Target: "/data/dirlink-out/planted.txt"}, fails(denied)},
					{fsOp{Op: "link", Path: "/data/dirlink-out/secret.txt", Target: "/data/stolen.txt"}, fails(denied)},
					{fsOp{Op: "chtimes", Path: "/data/link-out"}, fails(denied)},
					// No new links, so none to go through.
					{fsOp{Op: "symlink", Path: "/data/mine", Target: tr.outside}, fails(denied)},
					{fsOp{Op: "symlink", Path: "/data/mine", Target: "../" + filepath.Base(tr.outside)}, fails(denied)},
					{fsOp{Op: "symlink", Path: "/data/mine", Target: "hello.txt"}, fails(denied)},
					{fsOp{Op: "read", Path: "/data/mine/secret.txt"}, fails("No such file")},
					// Moving a link moves it, and it still leads nowhere.
					{fsOp{Op: "rename", Path: "/data/dirlink-out", Target: "/data/sub/moved"}, gives("ok")},
					{fsOp{Op: "read", Path: "/data/sub/moved/secret.txt"}, fails(denied)},
					{fsOp{Op: "remove", Path: "/data/link-out"}, gives("ok")},
					{fsOp{Op: "lstat", Path: "/data/link-out"}, fails("No such file")},
					// Ordinary work inside.
					{fsOp{Op: "mkdir", Path: "/data/new"}, gives("ok")},
					{fsOp{Op: "write", Path: "/data/new/a.txt", Data: "abc"}, gives("ok")},
					{fsOp{Op: "append", Path: "/data/new/a.txt", Data: "def"}, gives("ok")},
					{fsOp{Op: "read", Path: "/data/new/a.txt"}, gives("abcdef")},
					{fsOp{Op: "rename", Path: "/data/new/a.txt", Target: "/data/sub/b.txt"}, gives("ok")},
					{fsOp{Op: "link", Path: "/data/sub/b.txt", Target: "/data/c.txt"}, gives("ok")},
					{fsOp{Op: "remove", Path: "/data/sub/b.txt"}, gives("ok")},
					{fsOp{Op: "chtimes", Path: "/data/c.txt"}, gives("ok")},
					{fsOp{Op: "seek", Path: "/data/c.txt", Offset: 3}, gives("def")},
					{fsOp{Op: "write", Path: "/data/link-in", Data: "hello again"}, gives("ok")},
					{fsOp{Op: "remove", Path: "/data/new"}, gives("ok")},
					{fsOp{Op: "list", Path: "/data"}, gives("c.txt dangling-out dirlink-in hello.txt link-in link-out-rel sub/")},
				}...)
			} else {
				steps = append(steps, []step{
					{fsOp{Op: "write", Path: "/data/hello.txt", Data: "x"}, fails("")},
					{fsOp{Op: "write", Path: "/data/new.txt", Data: "x"}, fails("")},
					{fsOp{Op: "append", Path: "/data/hello.txt", Data: "x"}, fails("")},
					{fsOp{Op: "mkdir", Path: "/data/new"}, fails("Read-only file system")},
					{fsOp{Op: "remove", Path: "/data/hello.txt"}, fails("Read-only file system")},
					{fsOp{Op: "rename", Path: "/data/hello.txt", Target: "/data/x.txt"}, fails("Read-only file system")},
					{fsOp{Op: "link", Path: "/data/hello.txt", Target: "/data/x.txt"}, fails("Read-only file system")},
					{fsOp{Op: "chtimes", Path: "/data/hello.txt"}, fails("Read-only file system")},
					{fsOp{Op: "symlink", Path: "/data/mine", Target: tr.outside}, fails("Read-only file system")},
					{fsOp{Op: "list", Path: "/data"}, gives("dangling-out dirlink-in dirlink-out hello.txt link-in link-out link-out-rel sub/")},
				}...)
			}
			dirBefore := testenv.Tree(t, tr.dir)
			for _, s := range steps {
				expect(t, m, s.op, s.want)
			}
			testenv.SameTree(t, tr.outside, outsideBefore)
			if !writable {
				testenv.SameTree(t, tr.dir, dirBefore)
				return
			}
			for path, want := range map[string]string{"c.txt": "abcdef", "hello.txt": "hello again"} {
				if b, err := os.ReadFile(filepath.Join(tr.dir, path)); err != nil || string(b) != want {
					t.Errorf("%s on the host = %q, %v, want %q", path, b, err, want)
				}
			}
			fi, err := os.Stat(filepath.Join(tr.dir, "c.txt"))
			if want := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC); err != nil || !fi.ModTime().Equal(want) {
				t.Errorf("c.txt modified at %v, %v, want %v", fi.ModTime(), err, want)
			}
		})
	}
}

package rootfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox/rootfs"
)

const secret = "top secret"

// setup makes a granted directory and a directory outside it holding a secret. The
// granted directory holds links of every kind:
//
//	hello.txt            "hello"
//	sub/inner.txt        "inner"
//	sub/up          ->   ..                      (inside)
//	link-in         ->   hello.txt               (inside)
//	dirlink-in      ->   sub                     (inside)
//	link-out        ->   <outside>/secret.txt    (absolute, outside)
//	link-out-rel    ->   ../<outside>/secret.txt (relative, outside)
//	dirlink-out     ->   <outside>
//	dangling-out    ->   <outside>/missing.txt   (does not exist yet)
//	abs-in          ->   <dir>/hello.txt         (absolute, inside: refused all the same)
func setup(t *testing.T) (dir, outside string) {
	t.Helper()
	outside = t.TempDir()
	dir = t.TempDir()
	write(t, filepath.Join(outside, "secret.txt"), secret)
	write(t, filepath.Join(outside, "docs", "more.txt"), secret)
	write(t, filepath.Join(dir, "hello.txt"), "hello")
	write(t, filepath.Join(dir, "sub", "inner.txt"), "inner")
	rel, err := filepath.Rel(dir, filepath.Join(outside, "secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"sub/up":       "..",
		"link-in":      "hello.txt",
		"dirlink-in":   "sub",
		"link-out":     filepath.Join(outside, "secret.txt"),
		"link-out-rel": rel,
		"dirlink-out":  outside,
		"dangling-out": filepath.Join(outside, "missing.txt"),
		"abs-in":       filepath.Join(dir, "hello.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir string, writable bool) *rootfs.FS {
	t.Helper()
	f, err := rootfs.New(dir, writable)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readFile reads a whole file through the FS, as a guest would.
func readFile(f experimentalsys.FS, path string) (string, experimentalsys.Errno) {
	file, errno := f.OpenFile(path, experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		return "", errno
	}
	defer file.Close()
	var b []byte
	buf := make([]byte, 64)
	for {
		n, errno := file.Read(buf)
		if errno != 0 {
			return string(b), errno
		}
		if n == 0 {
			return string(b), 0
		}
		b = append(b, buf[:n]...)
	}
}

// writeFile creates or truncates a file through the FS and writes text to it.
func writeFile(f experimentalsys.FS, path, text string) experimentalsys.Errno {
	file, errno := f.OpenFile(path, experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0o644)
	if errno != 0 {
		return errno
	}
	_, errno = file.Write([]byte(text))
	if e := file.Close(); errno == 0 {
		errno = e
	}
	return errno
}

func readDir(f experimentalsys.FS, path string) ([]string, experimentalsys.Errno) {
	file, errno := f.OpenFile(path, experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	if errno != 0 {
		return nil, errno
	}
	defer file.Close()
	dirents, errno := file.Readdir(-1)
	names := make([]string, len(dirents))
	for i, d := range dirents {
		names[i] = d.Name
	}
	return names, errno
}

const (
	eperm = experimentalsys.EPERM
	erofs = experimentalsys.EROFS
)

// TestEscapesFail tries every way out through the links of setup, on a read-only and
// a writable FS. Nothing outside may be read or changed.
func TestEscapesFail(t *testing.T) {
	type op func(t *testing.T, f experimentalsys.FS) experimentalsys.Errno
	read := func(path string) op {
		return func(t *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			got, errno := readFile(f, path)
			if strings.Contains(got, secret) {
				t.Errorf("read %s = %q", path, got)
			}
			return errno
		}
	}
	stat := func(path string) op {
		return func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno { _, errno := f.Stat(path); return errno }
	}
	tests := []struct {
		name   string
		op     op
		rw, ro experimentalsys.Errno // the errno wanted on a writable and a read-only FS
	}{
		{"read absolute link out", read("link-out"), eperm, eperm},
		{"read relative link out", read("link-out-rel"), eperm, eperm},
		{"read absolute link in", read("abs-in"), eperm, eperm},
		{"read through dir link out", read("dirlink-out/secret.txt"), eperm, eperm},
		{"read through dir link out and in", read("dirlink-out/docs/more.txt"), eperm, eperm},
		{"read dotdot", read("sub/../../x"), eperm, eperm},
		{"read up and out", read("sub/up/../x"), eperm, eperm},
		{"stat link out", stat("link-out"), eperm, eperm},
		{"stat through dir link out", stat("dirlink-out/secret.txt"), eperm, eperm},
		{"lstat through dir link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			_, errno := f.Lstat("dirlink-out/secret.txt")
			return errno
		}, eperm, eperm},
		{"list dir link out", func(t *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			names, errno := readDir(f, "dirlink-out")
			if len(names) > 0 {
				t.Errorf("readDir(dirlink-out) = %q", names)
			}
			return errno
		}, eperm, eperm},
		{"readlink through dir link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			_, errno := f.Readlink("dirlink-out/x")
			return errno
		}, eperm, eperm},
		{"open link out for writing", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			_, errno := f.OpenFile("link-out", experimentalsys.O_RDWR, 0)
			return errno
		}, eperm, experimentalsys.ENOSYS},
		{"write link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return writeFile(f, "link-out", "pwned")
		}, eperm, experimentalsys.ENOSYS},
		{"create through dangling link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return writeFile(f, "dangling-out", "pwned")
		}, eperm, experimentalsys.ENOSYS},
		{"create through dir link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return writeFile(f, "dirlink-out/new.txt", "pwned")
		}, eperm, experimentalsys.ENOSYS},
		{"mkdir through dir link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return f.Mkdir("dirlink-out/new", 0o755)
		}, eperm, erofs},
		{"rename out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return f.Rename("hello.txt", "dirlink-out/stolen")
		}, eperm, erofs},
		{"rename in", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return f.Rename("dirlink-out/secret.txt", "stolen")
		}, eperm, erofs},
		{"unlink outside", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return f.Unlink("dirlink-out/secret.txt")
		}, eperm, erofs},
		{"rmdir outside", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno { return f.Rmdir("dirlink-out/docs") }, eperm, erofs},
		{"hard link in", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return f.Link("dirlink-out/secret.txt", "stolen")
		}, eperm, erofs},
		{"hard link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno {
			return f.Link("hello.txt", "dirlink-out/hl")
		}, eperm, erofs},
		{"chmod link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno { return f.Chmod("link-out", 0o777) }, eperm, erofs},
		{"utimens link out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno { return f.Utimens("link-out", 0, 0) }, eperm, erofs},
		{"symlink out", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("/etc", "etc") }, eperm, erofs},
		{"symlink in", func(_ *testing.T, f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("hello.txt", "mine") }, eperm, erofs},
	}
	for _, writable := range []bool{false, true} {
		t.Run(fmt.Sprintf("writable=%v", writable), func(t *testing.T) {
			dir, outside := setup(t)
			before, beforeDir := testenv.Tree(t, outside), testenv.Tree(t, dir)
			f := open(t, dir, writable)
			for _, tt := range tests {
				want := tt.ro
				if writable {
					want = tt.rw
				}
				if got := tt.op(t, f); got != want {
					t.Errorf("%s = %v, want %v", tt.name, got, want)
				}
			}
			testenv.SameTree(t, outside, before)
			testenv.SameTree(t, dir, beforeDir)
		})
	}
}

// TestEscapeErrno keeps the match on os.Root's unexported error honest: without it an
// escape would still fail, but with EIO.
func TestEscapeErrno(t *testing.T) {
	dir, _ := setup(t)
	f := open(t, dir, false)
	if _, errno := f.Stat("link-out"); errno != experimentalsys.EPERM {
		t.Fatalf("Stat(link-out) = %v, want EPERM", errno)
	}
}

func TestInsideWorks(t *testing.T) {
	for _, writable := range []bool{false, true} {
		t.Run(fmt.Sprintf("writable=%v", writable), func(t *testing.T) {
			dir, outside := setup(t)
			f := open(t, dir, writable)
			for path, want := range map[string]string{
				"hello.txt":             "hello",
				"link-in":               "hello",
				"dirlink-in/inner.txt":  "inner",
				"sub/up/hello.txt":      "hello",
				"sub/up/sub/up/link-in": "hello",
				"sub/../hello.txt":      "hello",
			} {
				if got, errno := readFile(f, path); errno != 0 || got != want {
					t.Errorf("read %s = %q, %v, want %q", path, got, errno, want)
				}
			}
			if got, errno := readFile(f, "dirlink-in/up/link-in/"); errno != experimentalsys.ENOTDIR {
				t.Errorf("read a file with a trailing slash = %q, %v, want ENOTDIR", got, errno)
			}
			names, errno := readDir(f, "dirlink-in")
			if errno != 0 || strings.Join(names, " ") != "inner.txt up" && strings.Join(names, " ") != "up inner.txt" {
				t.Errorf("readDir(dirlink-in) = %q, %v", names, errno)
			}
			// The root itself, as wazero opens it for a pre-opened directory.
			names, errno = readDir(f, ".")
			if errno != 0 || len(names) != 9 {
				t.Errorf("readDir(.) = %q, %v, want 9 entries", names, errno)
			}
			// Operations on a link itself are fine, wherever it points.
			if st, errno := f.Lstat("link-out"); errno != 0 || st.Mode&fs.ModeSymlink == 0 {
				t.Errorf("Lstat(link-out) = %v, %v, want a symlink", st.Mode, errno)
			}
			if got, errno := f.Readlink("link-out"); errno != 0 || got != filepath.ToSlash(filepath.Join(outside, "secret.txt")) {
				t.Errorf("Readlink(link-out) = %q, %v", got, errno)
			}
			if st, errno := f.Stat("dirlink-in"); errno != 0 || !st.Mode.IsDir() {
				t.Errorf("Stat(dirlink-in) = %v, %v, want a directory", st.Mode, errno)
			}
			// Seek, Pread, Stat on an open file.
			file, errno := f.OpenFile("link-in", experimentalsys.O_RDONLY, 0)
			if errno != 0 {
				t.Fatal(errno)
			}
			defer file.Close()
			buf := make([]byte, 3)
			if off, errno := file.Seek(2, io.SeekStart); errno != 0 || off != 2 {
				t.Errorf("Seek(2) = %d, %v", off, errno)
			}
			if n, errno := file.Read(buf); errno != 0 || string(buf[:n]) != "llo" {
				t.Errorf("Read after Seek(2) = %q, %v", buf[:n], errno)
			}
			if n, errno := file.Pread(buf[:2], 1); errno != 0 || string(buf[:n]) != "el" {
				t.Errorf("Pread(1) = %q, %v", buf[:n], errno)
			}
			if st, errno := file.Stat(); errno != 0 || st.Size != 5 || st.Ino == 0 {
				t.Errorf("Stat() = %+v, %v", st, errno)
			}
			if _, errno := file.Write([]byte("x")); errno != experimentalsys.EBADF {
				t.Errorf("Write on a file opened read-only = %v, want EBADF", errno)
			}
			// O_NOFOLLOW refuses a final link, even one that stays inside.
			if _, errno := f.OpenFile("link-in", experimentalsys.O_RDONLY|experimentalsys.O_NOFOLLOW, 0); errno != experimentalsys.ELOOP {
				t.Errorf("OpenFile(link-in, O_NOFOLLOW) = %v, want ELOOP", errno)
			}
			if _, errno := f.OpenFile("hello.txt", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0); errno != experimentalsys.ENOTDIR {
				t.Errorf("OpenFile(hello.txt, O_DIRECTORY) = %v, want ENOTDIR", errno)
			}
			if _, errno := f.OpenFile("missing", experimentalsys.O_RDONLY, 0); errno != experimentalsys.ENOENT {
				t.Errorf("OpenFile(missing) = %v, want ENOENT", errno)
			}
		})
	}
}

func TestWritable(t *testing.T) {
	dir, outside := setup(t)
	before := testenv.Tree(t, outside)
	f := open(t, dir, true)
	check := func(what string, errno experimentalsys.Errno) {
		t.Helper()
		if errno != 0 {
			t.Fatalf("%s = %v", what, errno)
		}
	}
	check("Mkdir(new)", f.Mkdir("new", 0o755))
	check("write new/a.txt", writeFile(f, "new/a.txt", "abc"))
	check("write link-in", writeFile(f, "link-in", "hello again")) // a link inside: writes hello.txt
	if b, _ := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "hello again" {
		t.Errorf("hello.txt = %q after writing through link-in", b)
	}
	check("Rename(new/a.txt, sub/b.txt)", f.Rename("new/a.txt", "sub/b.txt"))
	check("Link(sub/b.txt, c.txt)", f.Link("sub/b.txt", "c.txt"))
	check("Unlink(sub/b.txt)", f.Unlink("sub/b.txt"))
	if got, errno := readFile(f, "c.txt"); errno != 0 || got != "abc" {
		t.Errorf("read c.txt = %q, %v", got, errno)
	}
	if errno := f.Rmdir("c.txt"); errno != experimentalsys.ENOTDIR {
		t.Errorf("Rmdir(c.txt) = %v, want ENOTDIR", errno)
	}
	if errno := f.Unlink("new"); errno != experimentalsys.EISDIR {
		t.Errorf("Unlink(new) = %v, want EISDIR", errno)
	}
	check("Rmdir(new)", f.Rmdir("new"))
	check("Unlink(link-out)", f.Unlink("link-out")) // the link goes, its target stays
	check("Rename(dirlink-out, moved)", f.Rename("dirlink-out", "sub/moved"))
	if _, errno := readFile(f, "sub/moved/secret.txt"); errno != eperm {
		t.Errorf("read through a moved link out = %v, want EPERM", errno)
	}

	mtime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	check("Utimens(c.txt)", f.Utimens("c.txt", experimentalsys.UTIME_OMIT, mtime.UnixNano()))
	if fi, _ := os.Stat(filepath.Join(dir, "c.txt")); !fi.ModTime().Equal(mtime) {
		t.Errorf("c.txt mtime = %v, want %v", fi.ModTime(), mtime)
	}

	file, errno := f.OpenFile("c.txt", experimentalsys.O_RDWR, 0)
	check("OpenFile(c.txt, O_RDWR)", errno)
	defer file.Close()
	_, errno = file.Pwrite([]byte("X"), 1)
	check("Pwrite", errno)
	check("SetAppend(true)", file.SetAppend(true))
	if !file.IsAppend() {
		t.Error("IsAppend() = false after SetAppend(true)")
	}
	_, errno = file.Write([]byte("d"))
	check("Write in append mode", errno)
	check("Truncate(5)", file.Truncate(5))
	check("Utimens on the file", file.Utimens(mtime.UnixNano(), mtime.UnixNano()))
	check("Sync", file.Sync())
	if b, _ := os.ReadFile(filepath.Join(dir, "c.txt")); string(b) != "aXcd\x00" {
		t.Errorf("c.txt = %q, want %q", b, "aXcd\x00")
	}
	if _, errno := f.OpenFile("c.txt", experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_EXCL, 0o644); errno != experimentalsys.EEXIST {
		t.Errorf("OpenFile(c.txt, O_EXCL) = %v, want EEXIST", errno)
	}
	testenv.SameTree(t, outside, before)
}

func TestReadOnly(t *testing.T) {
	dir, _ := setup(t)
	before := testenv.Tree(t, dir)
	f := open(t, dir, false)
	for what, errno := range map[string]experimentalsys.Errno{
		"write hello.txt": writeFile(f, "hello.txt", "x"),
		"create new.txt":  writeFile(f, "new.txt", "x"),
		"Mkdir":           f.Mkdir("new", 0o755),
		"Rename":          f.Rename("hello.txt", "x"),
		"Unlink":          f.Unlink("hello.txt"),
		"Rmdir":           f.Rmdir("sub"),
		"Link":            f.Link("hello.txt", "x"),
		"Chmod":           f.Chmod("hello.txt", 0o777),
		"Utimens":         f.Utimens("hello.txt", 0, 0),
		"write link-in":   writeFile(f, "link-in", ""),
	} {
		if errno == 0 {
			t.Errorf("%s succeeded on a read-only FS", what)
		}
	}
	testenv.SameTree(t, dir, before)
}

// TestRenameRace is the attack that defeats checking a path and then handing it to the
// kernel: one guest keeps swapping a directory with a link that points out, while
// others read, create and stat under that name. Through os.Root every step is resolved
// inside the root, so no interleaving reaches the outside.
func TestRenameRace(t *testing.T) {
	dir, outside := setup(t)
	write(t, filepath.Join(dir, "d", "secret.txt"), "inside")
	if err := os.Symlink(outside, filepath.Join(dir, "evil")); err != nil {
		t.Fatal(err)
	}
	before := testenv.Tree(t, outside)
	f := open(t, dir, true)

	const rounds = 3000
	done := make(chan struct{})
	var swaps sync.WaitGroup
	swaps.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			f.Rename("d", "tmp")
			f.Rename("evil", "d")
			f.Rename("d", "evil")
			f.Rename("tmp", "d")
		}
	})
	var leaks sync.Map
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for range rounds {
				if got, _ := readFile(f, "d/secret.txt"); strings.Contains(got, secret) {
					leaks.Store("read", got)
				}
				if errno := writeFile(f, "d/new.txt", "x"); errno == 0 {
					f.Unlink("d/new.txt")
				}
				if st, errno := f.Stat("d/docs"); errno == 0 {
					leaks.Store("stat", st)
				}
			}
		})
	}
	readers.Wait()
	close(done)
	swaps.Wait()
	leaks.Range(func(k, v any) bool {
		t.Errorf("%v escaped: %v", k, v)
		return true
	})
	testenv.SameTree(t, outside, before)
}

func TestNewRefusesAFile(t *testing.T) {
	dir, _ := setup(t)
	_, err := rootfs.New(filepath.Join(dir, "hello.txt"), false)
	if err == nil {
		t.Fatal("New(a file) succeeded")
	}
	var pe *os.PathError
	if !errors.As(err, &pe) {
		t.Errorf("New(a file) = %v, want a *os.PathError", err)
	}
}

func ExampleNew() {
	outside, _ := os.MkdirTemp("", "outside")
	defer os.RemoveAll(outside)
	dir, _ := os.MkdirTemp("", "granted")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o600)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello"), 0o600)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "secret.txt"))
	os.Symlink("hello.txt", filepath.Join(dir, "greeting.txt"))

	f, err := rootfs.New(dir, true)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	// Mount it with wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(f, "/data").

	for _, name := range []string{"greeting.txt", "secret.txt"} {
		_, errno := f.Stat(name)
		fmt.Printf("stat %s: %v\n", name, errno)
	}
	fmt.Println("symlink:", f.Symlink("hello.txt", "mine.txt"))
	// Output:
	// stat greeting.txt: success
	// stat secret.txt: operation not permitted
	// symlink: operation not permitted
}

// FuzzPath hands the FS hostile paths, as a guest can, and checks that none reads the
// secret or changes anything outside.
func FuzzPath(f *testing.F) {
	for _, p := range []string{
		"", ".", "/", "..", "../", "./..", "/etc/passwd", "link-out", "link-out/", "dirlink-out/secret.txt",
		"dirlink-out/../hello.txt", "sub/up/..", "sub/up/../x", "sub/../../x", "dirlink-in/up/dirlink-out/docs",
		"dangling-out", "abs-in", "a\x00b", strings.Repeat("sub/up/", 40) + "hello.txt", "sub//up///link-in",
	} {
		f.Add(p, p)
	}
	f.Fuzz(func(t *testing.T, path, other string) {
		dir, outside := setup(t)
		before := testenv.Tree(t, outside)
		fsys := open(t, dir, true)
		if got, _ := readFile(fsys, path); strings.Contains(got, secret) {
			t.Errorf("read %q = %q", path, got)
		}
		fsys.Stat(path)
		fsys.Lstat(path)
		fsys.Readlink(path)
		readDir(fsys, path)
		writeFile(fsys, path, "pwned")
		fsys.Mkdir(path, 0o755)
		fsys.Utimens(path, 0, 0)
		fsys.Chmod(path, 0o777)
		fsys.Link(other, path)
		fsys.Rename(other, path)
		fsys.Symlink(other, path)
		fsys.Unlink(path)
		fsys.Rmdir(path)
		testenv.SameTree(t, outside, before)
	})
}

// The granted directory itself, which wazero opens for every instance, holds no
// descriptor of its own until it is listed: a worker running many instances does not
// run out of open files. It still stats, lists and rewinds like any directory.
func TestRootHoldsNoDescriptorPerOpen(t *testing.T) {
	dir, _ := setup(t)
	for _, writable := range []bool{false, true} {
		t.Run(fmt.Sprintf("writable=%v", writable), func(t *testing.T) {
			fsys, err := rootfs.New(dir, writable)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			count := func() int {
				fds, err := os.ReadDir("/proc/self/fd")
				if err != nil {
					t.Skip("no /proc/self/fd")
				}
				return len(fds)
			}
			before := count()
			var files []experimentalsys.File
			for range 100 {
				f, errno := fsys.OpenFile(".", experimentalsys.O_RDONLY, 0)
				if errno != 0 {
					t.Fatalf("OpenFile(.) = %v", errno)
				}
				files = append(files, f)
			}
			if after := count(); after > before+5 { // other goroutines may open a few
				t.Errorf("100 opens of the root hold %d more descriptors, want none", after-before)
			}
			f := files[0]
			if isDir, errno := f.IsDir(); !isDir || errno != 0 {
				t.Errorf("IsDir() = %v, %v; want true", isDir, errno)
			}
			st, errno := f.Stat()
			want, _ := os.Stat(dir)
			if errno != 0 || !st.Mode.IsDir() || st.Ino == 0 || st.Mode.Perm() != want.Mode().Perm() {
				t.Errorf("Stat() = %+v, %v; want the directory's", st, errno)
			}
			for round := range 2 {
				names := map[string]bool{}
				for {
					ents, errno := f.Readdir(3)
					if errno != 0 {
						t.Fatalf("Readdir() = %v", errno)
					}
					if len(ents) == 0 {
						break
					}
					for _, e := range ents {
						names[e.Name] = true
					}
				}
				if !names["hello.txt"] || !names["sub"] || !names["link-out"] {
					t.Errorf("round %d: Readdir names %v; want the directory's entries", round, names)
				}
				if _, errno := f.Seek(0, io.SeekStart); errno != 0 {
					t.Fatalf("Seek(0) = %v", errno)
				}
			}
			for _, f := range files {
				if errno := f.Close(); errno != 0 {
					t.Errorf("Close() = %v", errno)
				}
			}
			if errno := files[0].Close(); errno != 0 {
				t.Errorf("second Close() = %v, want none", errno)
			}
			if _, errno := files[0].Stat(); errno != experimentalsys.EBADF {
				t.Errorf("Stat() after Close = %v, want EBADF", errno)
			}
		})
	}
}

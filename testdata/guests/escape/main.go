// Command escape is a test guest that tries to leave the directories it was granted. Its
// one tool runs a single file-system operation on the paths it is given and returns
// the result, or the error text as a tool error, so that tests on the host can check
// that every escape through a symlink or ".." fails and ordinary work still succeeds.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

type fsArgs struct {
	Op     string `json:"op"`
	Path   string `json:"path"`
	Target string `json:"target,omitempty"` // symlink, link and rename: the second path
	Data   string `json:"data,omitempty"`   // write and append: the bytes to write
	Offset int64  `json:"offset,omitempty"` // seek: where to start reading
}

func init() {
	guest.Add(guest.Tool{
		Name: "fs",
		Description: "Runs one file-system operation (read, seek, write, append, list, stat, lstat, " +
			"readlink, symlink, link, rename, remove, mkdir, chtimes, rawread) and returns its result or error.",
	}, func(_ *guest.Call, in fsArgs) (*guest.Result, error) {
		out, err := run(in)
		if err != nil {
			return guest.Errorf("%v", err), nil
		}
		return guest.Text(out), nil
	})
}

func run(in fsArgs) (string, error) {
	switch in.Op {
	case "read":
		b, err := os.ReadFile(in.Path)
		return string(b), err
	case "seek":
		return seek(in.Path, in.Offset)
	case "write":
		return "ok", os.WriteFile(in.Path, []byte(in.Data), 0o644)
	case "append":
		f, err := os.OpenFile(in.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(in.Data)
		return "ok", errors.Join(err, f.Close())
	case "list":
		entries, err := os.ReadDir(in.Path)
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
			if e.IsDir() {
				names[i] += "/"
			}
		}
		return strings.Join(names, " "), err
	case "stat", "lstat":
		stat := os.Stat
		if in.Op == "lstat" {
			stat = os.Lstat
		}
		fi, err := stat(in.Path)
		if err != nil {
			return "", err
		}
		// WASI carries no permission bits, and a directory's size depends on the
		// host's file system: report the kind, and the size of the rest.
		switch {
		case fi.IsDir():
			return fi.Name() + " dir", nil
		case fi.Mode()&os.ModeSymlink != 0:
			return fmt.Sprintf("%s symlink %d", fi.Name(), fi.Size()), nil
		}
		return fmt.Sprintf("%s file %d", fi.Name(), fi.Size()), nil
	case "readlink":
		return os.Readlink(in.Path)
	case "symlink":
		return "ok", os.Symlink(in.Target, in.Path)
	case "link":
		return "ok", os.Link(in.Path, in.Target)
	case "rename":
		return "ok", os.Rename(in.Path, in.Target)
	case "remove":
		return "ok", os.Remove(in.Path)
	case "mkdir":
		return "ok", os.Mkdir(in.Path, 0o755)
	case "rawread":
		return rawRead(in.Path)
	case "chtimes":
		t := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		return "ok", os.Chtimes(in.Path, t, t)
	}
	return "", fmt.Errorf("unknown op %q", in.Op)
}

// seek reads a file from offset through Seek and again through ReadAt, and checks that
// both agree.
func seek(path string, offset int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	at := make([]byte, len(b))
	if _, err := f.ReadAt(at, offset); err != nil && err != io.EOF {
		return "", err
	}
	if string(at) != string(b) {
		return "", fmt.Errorf("Seek+Read gave %q, ReadAt gave %q", b, at)
	}
	return string(b), nil
}

// firstPreopen is the descriptor of the first granted directory: 0-2 are stdio.
const firstPreopen = 3

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32,
	rightsBase, rightsInheriting uint64, fdflags uint32, newFD unsafe.Pointer) uint32

// rawRead reads path relative to the first granted directory through path_open
// itself. Go's os package cleans "/data/../x" to "/x" before the host sees it;
// this hands the host the path exactly as given, "../" and all.
func rawRead(path string) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	b := []byte(path)
	const rightFDRead = 1 << 1
	var fd int32
	if errno := pathOpen(firstPreopen, 1 /* LOOKUP_SYMLINK_FOLLOW */, unsafe.Pointer(&b[0]), uint32(len(b)),
		0, rightFDRead, 0, 0, unsafe.Pointer(&fd)); errno != 0 {
		return "", &os.PathError{Op: "path_open", Path: path, Err: syscall.Errno(errno)}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	out, err := io.ReadAll(f)
	return string(out), err
}

func main() {}

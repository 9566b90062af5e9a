package rootfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// sysFS lets FS embed the interface under an unexported name.
type sysFS = experimentalsys.FS

// FS is a host directory as a wazero file system that a guest cannot leave (see the
// package documentation). Mount it with sysfs.FSConfig.WithSysFSMount. It is safe for
// concurrent use by many module instances; Close it when none uses it any more.
type FS struct {
	sysFS
	root *os.Root
}

// New opens dir. A read-only FS refuses every change; a writable one allows every
// change inside dir except creating symbolic links.
//
// A dir that is or resolves to /proc, /sys, /dev or below, or lies on a kernel file
// system, is refused with [ErrSpecial] (CheckDir).
func New(dir string, writable bool) (*FS, error) {
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// The directory as opened, whatever was renamed since CheckDir looked.
	if err := checkOpened(root, "."); err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var fsys experimentalsys.FS = &rootDir{root: root, writable: writable}
	if !writable {
		fsys = &sysfs.ReadFS{FS: fsys}
	}
	return &FS{sysFS: fsys, root: root}, nil
}

// Close releases the directory. Files that guests still hold open stay usable.
func (f *FS) Close() error {
	return f.root.Close()
}

// String returns the host directory, for messages.
func (f *FS) String() string { return f.root.Name() }

// checkOpened checks the file at path in root with checkFile.
func checkOpened(root *os.Root, path string) error {
	f, err := root.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return checkFile(f)
}

// checkFile refuses a file on a kernel file system (specialFile) and a device node:
// neither belongs in a grant of ordinary files.
func checkFile(f *os.File) error {
	rc, err := f.SyscallConn() // not f.Fd(), which would make a pollable file blocking
	if err != nil {
		return err
	}
	var name string
	if cerr := rc.Control(func(fd uintptr) { name, err = specialFile(fd) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	if name != "" {
		return fmt.Errorf("it is on %s: %w", name, ErrSpecial)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeDevice != 0 {
		return fmt.Errorf("it is a device: %w", ErrSpecial)
	}
	return nil
}

// errEscapes is the errno for a path that leaves the root.
const errEscapes = experimentalsys.EPERM

// errnoOf converts an error from os.Root or an os.File into an Errno.
func errnoOf(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	if escapes(err) {
		return errEscapes
	}
	return experimentalsys.UnwrapOSError(err)
}

// escapes reports whether err is os.Root's refusal of a path that leaves the root.
// os does not export that error, so this matches its text; TestEscapeErrno keeps the
// match honest. Were the text to change, the refusal would still happen, with EIO.
func escapes(err error) bool {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	if _, ok := err.(syscall.Errno); ok {
		return false
	}
	return err.Error() == "path escapes from parent"
}

// rootDir implements experimentalsys.FS with every path resolved by an os.Root.
type rootDir struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	writable bool
}

var _ experimentalsys.FS = (*rootDir)(nil)

// rel turns wazero's path into one os.Root accepts: wazero passes "" or "." for the
// root itself.
func rel(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// OpenFile implements experimentalsys.FS.
func (d *rootDir) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	path = rel(path)
	const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
		experimentalsys.O_TRUNC | experimentalsys.O_APPEND
	if !d.writable && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS // sysfs.ReadFS refuses these first; this is a backstop
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && flag&writeFlags != 0 {
		return nil, experimentalsys.EISDIR // a directory cannot be opened for writing
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		// os.Root follows a final link that stays inside; O_NOFOLLOW asks not to.
		// Should a rename put a link here after this check, os.Root still keeps to
		// the root.
		if fi, err := d.root.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	if path == "." && flag&writeFlags == 0 {
		return &rootSelf{d: d, flag: flag}, 0
	}
	f, err := d.root.OpenFile(path, osFlag(flag), perm&fs.ModePerm)
	if err != nil {
		return nil, errnoOf(err)
	}
	// A mount point or bind mount inside the grant can lead into a kernel file system.
	if err := checkFile(f); err != nil {
		_ = f.Close()
		return nil, errEscapes
	}
	file := &rootFile{root: d.root, name: path, flag: flag, perm: perm & fs.ModePerm, f: f}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		if isDir, errno := file.IsDir(); errno != 0 || !isDir {
			_ = f.Close()
			if errno == 0 {
				errno = experimentalsys.ENOTDIR
			}
			return nil, errno
		}
	}
	return file, 0
}

// osFlag converts wazero's open flags to os flags. O_DIRECTORY and O_NOFOLLOW are
// handled by OpenFile; O_DSYNC and O_RSYNC become the stronger O_SYNC, which every
// platform has.
func osFlag(flag experimentalsys.Oflag) int {
	var f int
	switch flag & (experimentalsys.O_RDONLY | experimentalsys.O_WRONLY | experimentalsys.O_RDWR) {
	case experimentalsys.O_WRONLY:
		f = os.O_WRONLY
	case experimentalsys.O_RDWR:
		f = os.O_RDWR
	default:
		f = os.O_RDONLY
	}
	for _, m := range []struct {
		from experimentalsys.Oflag
		to   int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
		{experimentalsys.O_SYNC | experimentalsys.O_DSYNC | experimentalsys.O_RSYNC, os.O_SYNC},
	} {
		if flag&m.from != 0 {
			f |= m.to
		}
	}
	return f
}

// Lstat implements experimentalsys.FS.
func (d *rootDir) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := d.root.Lstat(rel(path))
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat implements experimentalsys.FS.
func (d *rootDir) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := d.root.Stat(rel(path))
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

// Readlink implements experimentalsys.FS.
func (d *rootDir) Readlink(path string) (string, experimentalsys.Errno) {
	target, err := d.root.Readlink(rel(path))
	if err != nil {
		return "", errnoOf(err)
	}
	return filepath.ToSlash(target), 0
}

// Mkdir implements experimentalsys.FS.
func (d *rootDir) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	errno := errnoOf(d.root.Mkdir(rel(path), perm&fs.ModePerm))
	if errno == experimentalsys.ENOTDIR { // as sysfs.DirFS: a missing parent
		errno = experimentalsys.ENOENT
	}
	return errno
}

// Chmod implements experimentalsys.FS. Only permission bits are changed.
func (d *rootDir) Chmod(path string, perm fs.FileMode) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	return errnoOf(d.root.Chmod(rel(path), perm&fs.ModePerm))
}

// Rename implements experimentalsys.FS.
func (d *rootDir) Rename(from, to string) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	if from == to {
		return 0
	}
	return errnoOf(d.root.Rename(rel(from), rel(to)))
}

// Rmdir implements experimentalsys.FS. os.Root has no rmdir of its own, so this checks
// that path is a directory, then removes it; should a concurrent rename put an empty
// file there in between, that file goes instead, inside the root either way.
func (d *rootDir) Rmdir(path string) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	path = rel(path)
	fi, err := d.root.Lstat(path)
	if err != nil {
		return errnoOf(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errnoOf(d.root.Remove(path))
}

// Unlink implements experimentalsys.FS. It removes a link itself, not its target. As
// with Rmdir, the check that path is not a directory comes before the removal.
func (d *rootDir) Unlink(path string) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	path = rel(path)
	fi, err := d.root.Lstat(path)
	if err != nil {
		return errnoOf(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errnoOf(d.root.Remove(path))
}

// Link implements experimentalsys.FS. If oldPath is a symbolic link, the new name is a
// hard link to the link, not to its target (os.Root.Link).
func (d *rootDir) Link(oldPath, newPath string) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	return errnoOf(d.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink implements experimentalsys.FS: guests never create symbolic links.
func (d *rootDir) Symlink(oldPath, linkName string) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

// Utimens implements experimentalsys.FS.
func (d *rootDir) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	if !d.writable {
		return experimentalsys.EROFS
	}
	return utimens(d.root, rel(path), atim, mtim)
}

func utimens(root *os.Root, path string, atim, mtim int64) experimentalsys.Errno {
	if atim == experimentalsys.UTIME_OMIT && mtim == experimentalsys.UTIME_OMIT {
		return 0
	}
	return errnoOf(root.Chtimes(path, toTime(atim), toTime(mtim)))
}

// toTime converts a wazero timestamp; the zero time.Time leaves a time unchanged.
func toTime(nanos int64) time.Time {
	if nanos == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, nanos)
}

// rootFile is a file opened through the root. It is used through its descriptor; the
// name (relative to the root) serves only SetAppend and Utimens.
type rootFile struct {
	experimentalsys.UnimplementedFile
	root   *os.Root
	name   string
	flag   experimentalsys.Oflag
	perm   fs.FileMode
	f      *os.File
	closed bool

	// Fields that do not change while the file is open, filled by the first Stat.
	statted bool
	dev     uint64
	ino     sys.Inode
	isDir   bool
}

var _ experimentalsys.File = (*rootFile)(nil)

// Dev implements experimentalsys.File.
func (r *rootFile) Dev() (uint64, experimentalsys.Errno) {
	if errno := r.cacheStat(); errno != 0 {
		return 0, errno
	}
	return r.dev, 0
}

// Ino implements experimentalsys.File.
func (r *rootFile) Ino() (sys.Inode, experimentalsys.Errno) {
	if errno := r.cacheStat(); errno != 0 {
		return 0, errno
	}
	return r.ino, 0
}

// IsDir implements experimentalsys.File.
func (r *rootFile) IsDir() (bool, experimentalsys.Errno) {
	if errno := r.cacheStat(); errno != 0 {
		return false, errno
	}
	return r.isDir, 0
}

func (r *rootFile) cacheStat() experimentalsys.Errno {
	if r.statted {
		return 0
	}
	_, errno := r.Stat()
	return errno
}

// Stat implements experimentalsys.File.
func (r *rootFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if r.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	fi, err := r.f.Stat()
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	st := sys.NewStat_t(fi)
	r.statted, r.dev, r.ino, r.isDir = true, st.Dev, st.Ino, fi.IsDir()
	return st, 0
}

// IsAppend implements experimentalsys.File.
func (r *rootFile) IsAppend() bool {
	return r.flag&experimentalsys.O_APPEND != 0
}

// SetAppend implements experimentalsys.File. Append mode is fixed when a file is
// opened, so this opens the file again through the root and keeps the new descriptor
// only if it is the same file.
func (r *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if enable == r.IsAppend() {
		return 0
	}
	if isDir, errno := r.IsDir(); errno != 0 {
		return errno
	} else if isDir {
		return experimentalsys.EISDIR
	}
	flag := r.flag &^ (experimentalsys.O_CREAT | experimentalsys.O_EXCL | experimentalsys.O_TRUNC | experimentalsys.O_APPEND)
	if enable {
		flag |= experimentalsys.O_APPEND
	}
	offset, err := r.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return errnoOf(err)
	}
	f, err := r.root.OpenFile(r.name, osFlag(flag), r.perm)
	if err != nil {
		return errnoOf(err)
	}
	if errno := sameFile(r.f, f); errno != 0 {
		_ = f.Close()
		return errno
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		_ = f.Close()
		return errnoOf(err)
	}
	_ = r.f.Close()
	r.f, r.flag = f, flag
	return 0
}

// sameFile returns ENOENT unless a and b are the same file: the name no longer leads
// to the file that was opened.
func sameFile(a, b *os.File) experimentalsys.Errno {
	ai, err := a.Stat()
	if err != nil {
		return errnoOf(err)
	}
	bi, err := b.Stat()
	if err != nil {
		return errnoOf(err)
	}
	if !os.SameFile(ai, bi) {
		return experimentalsys.ENOENT
	}
	return 0
}

// fileErrno refines the errno of a failed read, write or truncate as wazero's own files
// do: EBADF once closed, EISDIR on a directory.
func (r *rootFile) fileErrno(errno experimentalsys.Errno) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if isDir, e := r.IsDir(); e == 0 && isDir {
		return experimentalsys.EISDIR
	}
	return errno
}

// Read implements experimentalsys.File.
func (r *rootFile) Read(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := r.f.Read(buf)
	if errno := errnoOf(err); errno != 0 {
		return n, r.fileErrno(errno)
	}
	return n, 0
}

// Pread implements experimentalsys.File.
func (r *rootFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := r.f.ReadAt(buf, off)
	if errno := errnoOf(err); errno != 0 {
		return n, r.fileErrno(errno)
	}
	return n, 0
}

// fileOffset is int64. Declaring Seek with the alias keeps go vet's stdmethods check,
// which expects io.Seeker's (int64, error) results of any Seek(int64, int), quiet.
type fileOffset = int64

// Seek implements experimentalsys.File. Seeking a directory to 0 rewinds Readdir.
func (r *rootFile) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	if uint(whence) > io.SeekEnd {
		return 0, experimentalsys.EINVAL
	}
	n, err := r.f.Seek(offset, whence)
	if errno := errnoOf(err); errno != 0 {
		if r.closed {
			return 0, experimentalsys.EBADF
		}
		return 0, errno
	}
	return n, 0
}

// Readdir implements experimentalsys.File. os.File.Readdir stats each entry relative
// to the directory's descriptor (fstatat), not by a path from the host's root.
func (r *rootFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if r.closed {
		return nil, experimentalsys.EBADF
	}
	fis, err := r.f.Readdir(n)
	if errno := errnoOf(err); errno != 0 {
		if isDir, e := r.IsDir(); e == 0 && !isDir {
			errno = experimentalsys.EBADF // the contract's errno for "not a directory"
		}
		return nil, errno
	}
	dirents := make([]experimentalsys.Dirent, len(fis))
	for i, fi := range fis {
		dirents[i] = experimentalsys.Dirent{Name: fi.Name(), Ino: sys.NewStat_t(fi).Ino, Type: fi.Mode().Type()}
	}
	return dirents, 0
}

// Write implements experimentalsys.File.
func (r *rootFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := r.f.Write(buf)
	if errno := errnoOf(err); errno != 0 {
		return n, r.fileErrno(errno)
	}
	return n, 0
}

// Pwrite implements experimentalsys.File.
func (r *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := r.f.WriteAt(buf, off)
	if errno := errnoOf(err); errno != 0 {
		return n, r.fileErrno(errno)
	}
	return n, 0
}

// Truncate implements experimentalsys.File.
func (r *rootFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if errno := errnoOf(r.f.Truncate(size)); errno != 0 {
		return r.fileErrno(errno)
	}
	return 0
}

// Sync implements experimentalsys.File.
func (r *rootFile) Sync() experimentalsys.Errno {
	return errnoOf(r.f.Sync())
}

// Datasync implements experimentalsys.File.
func (r *rootFile) Datasync() experimentalsys.Errno {
	return errnoOf(r.f.Sync())
}

// Utimens implements experimentalsys.File. os.File cannot set times through its
// descriptor, so this goes by name through the root, after checking that the name
// still leads to this file (ENOENT if it was renamed or replaced).
func (r *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	byName, err := r.root.Stat(r.name)
	if err != nil {
		return errnoOf(err)
	}
	own, err := r.f.Stat()
	if err != nil {
		return errnoOf(err)
	}
	if !os.SameFile(byName, own) {
		return experimentalsys.ENOENT
	}
	return utimens(r.root, r.name, atim, mtim)
}

// Close implements experimentalsys.File.
func (r *rootFile) Close() experimentalsys.Errno {
	if r.closed {
		return 0
	}
	r.closed = true
	return errnoOf(r.f.Close())
}

// rootSelf is the granted directory itself, opened for reading. wazero opens it for
// every instance that looks at its preopened directory (a Go guest does as it
// starts), so a descriptor of its own would cost every running instance one open file
// per grant, and a worker running many instances would run out of them. It answers
// Stat, Dev, Ino and IsDir through the root's own descriptor and opens one only to
// list, seek, sync or touch the directory.
type rootSelf struct {
	experimentalsys.DirFile
	d      *rootDir
	flag   experimentalsys.Oflag
	f      *rootFile // opened on first need
	closed bool
}

var _ experimentalsys.File = (*rootSelf)(nil)

// file returns the directory opened through the root, opening it the first time.
func (r *rootSelf) file() (*rootFile, experimentalsys.Errno) {
	if r.closed {
		return nil, experimentalsys.EBADF
	}
	if r.f == nil {
		f, err := r.d.root.OpenFile(".", osFlag(r.flag), 0)
		if err != nil {
			return nil, errnoOf(err)
		}
		r.f = &rootFile{root: r.d.root, name: ".", flag: r.flag, f: f}
	}
	return r.f, 0
}

// Stat implements experimentalsys.File.
func (r *rootSelf) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if r.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	return r.d.Stat(".")
}

// Dev implements experimentalsys.File.
func (r *rootSelf) Dev() (uint64, experimentalsys.Errno) {
	st, errno := r.Stat()
	return st.Dev, errno
}

// Ino implements experimentalsys.File.
func (r *rootSelf) Ino() (sys.Inode, experimentalsys.Errno) {
	st, errno := r.Stat()
	return st.Ino, errno
}

// IsDir implements experimentalsys.File.
func (r *rootSelf) IsDir() (bool, experimentalsys.Errno) {
	_, errno := r.Stat()
	return errno == 0, errno
}

// Seek implements experimentalsys.File.
func (r *rootSelf) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	f, errno := r.file()
	if errno != 0 {
		return 0, errno
	}
	return f.Seek(offset, whence)
}

// Readdir implements experimentalsys.File.
func (r *rootSelf) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	f, errno := r.file()
	if errno != 0 {
		return nil, errno
	}
	return f.Readdir(n)
}

// Sync implements experimentalsys.File.
func (r *rootSelf) Sync() experimentalsys.Errno {
	f, errno := r.file()
	if errno != 0 {
		return errno
	}
	return f.Sync()
}

// Datasync implements experimentalsys.File.
func (r *rootSelf) Datasync() experimentalsys.Errno { return r.Sync() }

// Utimens implements experimentalsys.File.
func (r *rootSelf) Utimens(atim, mtim int64) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	return utimens(r.d.root, ".", atim, mtim)
}

// Close implements experimentalsys.File.
func (r *rootSelf) Close() experimentalsys.Errno {
	if r.closed {
		return 0
	}
	r.closed = true
	if r.f != nil {
		return r.f.Close()
	}
	return 0
}

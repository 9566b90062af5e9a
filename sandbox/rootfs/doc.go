// Package rootfs gives a WebAssembly guest a host directory that it cannot leave.
//
// # The threat
//
// wazero's own directory mounts (FSConfig.WithDirMount, WithReadOnlyDirMount) reject
// ".." and absolute paths, but they hand every other path to the host's open(2), stat(2)
// and friends as a string joined onto the mount's directory. The kernel then follows
// any symbolic link it meets on the way, wherever it points (wazero issue #2321):
//
//   - a link that already exists in a granted directory, such as notes/key -> ~/.ssh/id_rsa
//     or notes/etc -> /etc, lets a guest read, and on a writable grant write, outside it;
//   - on a writable grant a guest can make such a link itself (path_symlink) and go
//     through it.
//
// Checking each path first and then handing the string to the kernel does not close
// the hole: between the check and the use, another instance of the same plugin (calls
// run concurrently, each in a fresh instance, on the same grant) can rename a directory
// away and rename an existing outside-pointing link into its place. No link has to be
// created for that.
//
// # The design
//
// [New] opens the directory as an [os.Root] and implements wazero's
// experimental/sys.FS on it. os.Root resolves every path itself, one component at a
// time from a descriptor of the root (openat with O_NOFOLLOW), follows a symbolic
// link only after checking that its target stays inside the root, and restarts from
// the root at each "..". The kernel never resolves a guest's path from the host's
// namespace, so there is no window between a check and a use: whatever the links
// and renames, an operation reaches only files inside the directory.
//
//   - A symlink whose target stays inside the directory still works. One that leaves
//     it, or is absolute (os.Root refuses absolute targets), fails with EPERM, the
//     errno wazero itself gives a path that escapes with "..". A Go guest sees
//     "operation not permitted".
//   - Operations on a link itself (lstat, readlink, unlink, rename) work: they do not
//     follow it.
//   - A guest never creates symbolic links: Symlink fails with EPERM. Links a guest
//     made could mislead host programs that later read the directory without os.Root.
//   - Files are opened through the root and used through their descriptor; only
//     SetAppend (re-open) and Utimens (by name) go back to the name, through the
//     root again.
//   - The directory itself, opened for reading (wazero opens it for each instance that
//     looks at its preopened directory, as every Go guest does), holds no descriptor
//     of its own: it is answered through the root's descriptor, and one is opened only
//     to list it. Otherwise every running instance would cost an open file per grant.
//   - A read-only grant is wrapped in wazero's sysfs.ReadFS, as WithReadOnlyDirMount
//     does, so writes fail exactly as before (EROFS, or ENOSYS for opening to write).
//
// # Limits
//
//   - os.Root follows at most 8 symbolic links per path (the kernel: 40); a longer
//     chain fails with ELOOP.
//   - Kernel file systems are out of reach: [New] refuses a directory that is or
//     resolves to /proc, /sys, /dev or below, or lies on procfs, sysfs, cgroupfs,
//     debugfs, tracefs, securityfs, bpf, configfs, mqueue or another such file system
//     (statfs), naming [SpecialRule]; and a file opened inside the grant that turns out
//     to be on one (through a mount point or bind mount in the directory) or to be a
//     device node is closed again and refused with EPERM. Stat, Lstat and Readlink
//     through such a mount still answer: they reveal names and sizes, not contents.
//   - os.Root does not stop at other mount points or bind mounts inside the directory,
//     and it opens FIFOs like the kernel does (opening one blocks until a writer
//     appears). Grant directories that hold ordinary files.
//   - The root is held open by descriptor: if the host directory is renamed while
//     the server runs, the grant keeps pointing at it in its new place.
//   - Readlink returns a link's text, so a guest can learn where an escaping link
//     points, though not follow it.
//   - Files are not pollable: non-blocking mode (fd_fdstat_set_flags NONBLOCK) on a
//     regular file answers ENOSYS; Go guests then read in blocking mode, which for
//     regular files is the same.
//   - On Unix, os.Root's Chmod and Chtimes check for a link and then act by name;
//     if a concurrent rename puts a link there in between, they act on the link
//     itself. Either way the file is inside the root.
package rootfs

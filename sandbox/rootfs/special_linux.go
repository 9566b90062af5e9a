package rootfs

import "golang.org/x/sys/unix"

// Magic numbers linux/magic.h defines that golang.org/x/sys/unix lacks.
const (
	configfsMagic = 0x62656570
	mqueueMagic   = 0x19800202
)

// specialFS names, by statfs f_type, the kernel file systems a grant may never reach:
// they expose the server's own process (/proc/<pid>/environ), the kernel's settings
// and the machine's devices, not ordinary files. devtmpfs reports tmpfs's type, so
// /dev is refused by its path (specialDirs) instead.
var specialFS = map[int64]string{
	unix.PROC_SUPER_MAGIC:     "procfs",
	unix.SYSFS_MAGIC:          "sysfs",
	unix.DEVPTS_SUPER_MAGIC:   "devpts",
	unix.CGROUP_SUPER_MAGIC:   "cgroupfs",
	unix.CGROUP2_SUPER_MAGIC:  "cgroup2fs",
	unix.DEBUGFS_MAGIC:        "debugfs",
	unix.TRACEFS_MAGIC:        "tracefs",
	unix.SECURITYFS_MAGIC:     "securityfs",
	unix.BPF_FS_MAGIC:         "bpf",
	configfsMagic:             "configfs",
	mqueueMagic:               "mqueue",
	unix.PSTOREFS_MAGIC:       "pstore",
	unix.EFIVARFS_MAGIC:       "efivarfs",
	unix.SELINUX_MAGIC:        "selinuxfs",
	unix.SMACK_MAGIC:          "smackfs",
	unix.BINFMTFS_MAGIC:       "binfmt_misc",
	unix.NSFS_MAGIC:           "nsfs",
	unix.RDTGROUP_SUPER_MAGIC: "resctrl",
	unix.ANON_INODE_FS_MAGIC:  "anon_inodefs",
	0x65735543:                "fusectl", // FUSE_CTL_SUPER_MAGIC
}

// specialFile returns the name of the special file system that the open descriptor
// fd is on, or "".
func specialFile(fd uintptr) (string, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(fd), &st); err != nil {
		return "", err
	}
	return specialFS[int64(st.Type)], nil
}

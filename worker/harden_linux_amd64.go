package worker

const (
	seccompArch    = 0xc000003e // AUDIT_ARCH_X86_64
	seccompX32Bit  = 0x40000000
	seccompSyscall = 317
)

// seccompDenied are the system calls a worker never makes: networking, running other
// programs, inspecting other processes, and changing what the kernel lets it see.
var seccompDenied = []uint32{
	41, 42, 43, 49, 50, 288, // socket connect accept bind listen accept4
	59, 322, // execve execveat
	101, 310, 311, // ptrace process_vm_readv process_vm_writev
	165, 166, 155, 161, 272, 308, // mount umount2 pivot_root chroot unshare setns
	321, 298, 323, 425, // bpf perf_event_open userfaultfd io_uring_setup
	248, 249, 250, // add_key request_key keyctl
	175, 313, 176, 246, 320, // init_module finit_module delete_module kexec_load kexec_file_load
	304, 135, // open_by_handle_at personality
}

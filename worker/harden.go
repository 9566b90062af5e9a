package worker

// hardening is what a worker does to itself once its plugin is loaded and before it
// runs any call. The supervisor decides; the worker applies.
type hardening struct {
	// OpenFiles caps file descriptors (RLIMIT_NOFILE); 0 leaves the limit alone.
	OpenFiles uint64 `json:"openFiles"`
	// AddressSpaceMiB caps virtual memory (RLIMIT_AS); 0 leaves it alone.
	AddressSpaceMiB uint64 `json:"addressSpaceMiB"`
	// Nice is the scheduling priority (nice value, 0-19) of every thread of the worker;
	// 0 leaves it alone.
	Nice int `json:"nice"`
	// Seccomp installs a filter that refuses sockets, exec, ptrace and other system
	// calls a worker never needs, where the platform supports it.
	Seccomp bool `json:"seccomp"`
}

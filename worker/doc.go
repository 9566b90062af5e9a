// Package worker runs a plugin's guest code in a separate, supervised process, so that
// a hostile guest can never stall the server.
//
// In one process, wazero cannot guarantee that a guest stops: a guest whose functions
// call each other in a loop-free exponential tree ignores its context, and any guest
// stuck in compiled code freezes the whole Go process at the next garbage collection.
// A process can always be killed. So every plugin not marked trusted gets a worker
// process, started from the server's own binary ([Main] is its entry point): the worker
// compiles the plugin once and runs each call in a fresh wazero instance, exactly as the
// in-process [sandbox.Module] does, and the server keeps everything else (the task engine,
// the MCP sessions).
//
// The supervisor ([Supervisor], [Module]) speaks to a worker over its stdin and stdout
// with length-prefixed binary frames (frame.go). A call is cancelled through its context
// inside the worker first; if the worker has not answered within [DefaultKillGrace] after the
// call's deadline or cancellation, the supervisor kills it with SIGKILL. Calls whose
// guest had begun in a killed or crashed worker fail with a message saying so; calls
// it had not begun (the worker says when a guest begins) are sent again. A plugin has
// a pool of workers (pool.go): calls of one client go to one of them, and a worker
// that dies is restarted at once in the background, with a growing delay if it keeps
// dying. Host functions (logs, progress, requests for user input) cross the
// boundary as frames, and the supervisor treats every frame from a worker as hostile.
//
// A worker starts with an empty environment, no inherited file descriptors beyond the
// channel and stderr, the root directory as its working directory, resource limits
// (open files, core dumps, file size, address space) and, where the kernel allows, a
// seccomp filter that refuses sockets and exec. Its Go memory limit and address space
// are sized for [Spec.MaxConcurrent] calls at the plugin's memory limit (memory.go); a
// worker that runs out of memory all the same tells every call it held.
//
// Where a worker's time goes is not visible from the server: with
// [Options.ProfileDir] (config key [server] worker_profile_dir) each worker writes a
// CPU profile of its life when it exits, to a file the server opened and handed it
// as its one extra descriptor (profile.go). worker.BenchmarkCall measures the
// boundary's CPU on both sides per call. What it showed shaped the hot path: a worker
// runs calls on runner goroutines that wait for the next call (a fresh goroutine grew
// its stack for wazero on every call), frames sent while a write is under way go out
// together in the next write (writer), and the supervisor reuses its per-call state.
package worker

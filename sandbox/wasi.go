package sandbox

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// wasiStateless lists the WASI functions that leave nothing in an instance that
// outlives the call, for an instance with no directory grants (its only files are
// stdin, which reads as empty, and stdout and stderr, which write to the call's
// buffers): reading the arguments, environment, clocks and random bytes, reading
// and writing stdio, asking about files, sleeping, yielding. Every other function
// (fd_close, fd_renumber, path_open, fd_fdstat_set_flags, sock_accept, ...) may
// change the instance's file table, so a call that makes one is never restored:
// its instance is closed.
var wasiStateless = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true,
	"sched_yield": true, "poll_oneoff": true,
	"fd_write": true, "fd_read": true, "fd_fdstat_get": true, "fd_filestat_get": true,
	"fd_prestat_get": true, "fd_prestat_dir_name": true,
	"fd_seek": true, "fd_tell": true, // stdio cannot seek (ENOSYS): it has no offset
}

// wasiModule builds the WASI module the guests import: wazero's own functions, each
// counted in the calling instance's callState (a call made while instantiating means
// the instance's start depends on the world, so instances cannot be restored to one
// image), and those that may change the file table marking the call so that its
// instance is closed rather than restored.
func wasiModule(ctx context.Context, rt wazero.Runtime) (wazero.CompiledModule, error) {
	real, err := wasi_snapshot_preview1.NewBuilder(rt).Compile(ctx)
	if err != nil {
		return nil, err
	}
	defer real.Close(ctx)
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	defs := real.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(defs)) { // the same module every time
		def := defs[name]
		f, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return nil, fmt.Errorf("WASI function %s is not a Go module function", name)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(counted(f, !wasiStateless[name]), def.ParamTypes(), def.ResultTypes()).
			WithParameterNames(def.ParamNames()...).
			WithResultNames(def.ResultNames()...).
			Export(name)
	}
	return b.Compile(ctx)
}

// counted wraps a WASI function to count its calls in the caller's callState and,
// with taints, to mark the instance as changed beyond restoring.
func counted(f api.GoModuleFunction, taints bool) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		if st, _ := ctx.Value(callStateKey{}).(*callState); st != nil {
			st.hostCalls++
			st.tainted = st.tainted || taints
		}
		f.Call(ctx, mod, stack)
	}
}

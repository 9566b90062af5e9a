package harness

import (
	"context"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Bare is the floor of a call: wazero alone instantiating a module and calling
// mcpwh_call, with just enough host functions to hand it its input and take its output,
// on the same runtime settings as the sandbox (compilation cache, close on context
// done). No limits, grants, checks or MCP.
type Bare struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	cfg      wazero.ModuleConfig
	Output   []byte // what the last call wrote
}

// NewBare compiles the module at path (through the cache in cacheDir) for calls of
// tool with args.
func NewBare(ctx context.Context, cacheDir, path, tool, args string) (*Bare, error) {
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, err
	}
	b := &Bare{rt: wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, b.rt); err != nil {
		b.Close(ctx)
		return nil, err
	}
	input := []byte(`{"tool":"` + tool + `","arguments":` + args + `}`)
	i32 := api.ValueTypeI32
	nop := api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) { s[0] = 0 })
	_, err = b.rt.NewHostModuleBuilder("mcpwh").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(len(input))
	}), nil, []api.ValueType{i32}).Export("input_len").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		m.Memory().Write(uint32(s[0]), input)
		s[0] = uint64(len(input))
	}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("input_read").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		out, _ := m.Memory().Read(uint32(s[0]), uint32(s[1]))
		b.Output = append(b.Output[:0], out...)
		s[0] = 0
	}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("output_write").
		NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export("log").
		NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{api.ValueTypeF64, api.ValueTypeF64, i32, i32}, []api.ValueType{i32}).Export("progress").
		NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("request").
		NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("reply_read").
		Instantiate(ctx)
	if err != nil {
		b.Close(ctx)
		return nil, err
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Close(ctx)
		return nil, err
	}
	if b.compiled, err = b.rt.CompileModule(ctx, wasm); err != nil {
		b.Close(ctx)
		return nil, fmt.Errorf("compile %s: %w", path, err)
	}
	b.cfg = wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
	return b, nil
}

// Call instantiates a fresh instance, calls mcpwh_call once and closes the instance.
func (b *Bare) Call(ctx context.Context) error {
	mod, err := b.rt.InstantiateModule(ctx, b.compiled, b.cfg)
	if err != nil {
		return err
	}
	defer mod.Close(ctx)
	res, err := mod.ExportedFunction("mcpwh_call").Call(ctx)
	if err != nil {
		return err
	}
	if res[0] != 0 {
		return fmt.Errorf("mcpwh_call returned %d: %s", res[0], b.Output)
	}
	return nil
}

// Close releases the runtime.
func (b *Bare) Close(ctx context.Context) error { return b.rt.Close(ctx) }

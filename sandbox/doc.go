// Package sandbox runs WebAssembly plugins under the guest ABI v1 (docs/ABI.md) with
// wazero: one [Engine] per server holds the compilation cache; one [Module] per plugin
// holds its compiled code, its limits and its grants; every [Module.Call] runs in an
// instance in the state of a fresh one: new, or kept from an earlier call and restored
// exactly, memory and globals, where the module allows that (kept.go, restorable.go).
//
// The sandbox denies by default. A guest gets no arguments, no environment, no files,
// no network and no host access except the host functions of the ABI and what the
// operator grants in [Grants]: named environment variables and directory mounts,
// read-only unless marked writable. A guest cannot leave a granted directory, not even
// through a symbolic link that points out of it, and cannot create symbolic links
// (package rootfs). Random numbers come from crypto/rand and clocks are real, because
// wazero's defaults (a fixed seed, a frozen clock) break tools silently.
//
// Every byte a guest hands the host is hostile: host functions check each pointer and
// length against the guest's memory and the limits in docs/ABI.md, copy what they read,
// and answer bad input with a status code, never a panic.
//
// A plugin's memory_mib ([Limits.MemoryMiB]) bounds what one instance holds: its tables
// (8 bytes per element, at their maximum; a table without one is held to its minimum)
// plus its linear memory, which is an address-space reservation of the rest, grown in
// place and reused, zeroed, by later instances (memory.go, tables.go). After a burst of
// calls the engine gives its idle memory back to the operating system (release.go).
//
// Typical use:
//
//	e, _ := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: dir})
//	defer e.Close(ctx)
//	m, err := e.Load(ctx, sandbox.Spec{Name: "textkit", Wasm: bytes} // zero Limits: the defaults)
//	manifest, err := m.Describe(ctx)
//	out, err := m.Call(ctx, []byte(`{"tool":"stats","arguments":{"text":"hi"}}`), host)
//
// A failing guest yields a [*GuestError] whose message is written for the person who
// called the tool; its Kind tells a program what happened.
package sandbox

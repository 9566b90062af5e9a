// Package manifests caches what describing a plugin module returned, so that a server
// start need not run a module it has described before.
//
// Describing a plugin means running it twice, each time in a fresh instance: once for
// its ABI version (mcpwh_abi_version) and once for its manifest (mcpwh_describe). For a
// Go guest each instance starts the Go runtime inside the guest; with ten plugins that
// is a large share of a warm start. A [Cache] keeps the manifest of every module that
// loaded, in files next to the compilation cache, under a [Key] that names everything
// that can change the outcome: the module's sha256, the host program's build
// ([HostID]), the ABI version, the memory and time limits and the environment the
// guest is given. Plugins with directory grants are not cached (their describe may
// read the directories), and neither is anything when the compilation cache is off.
//
// The cache only skips running the module. Loading still compiles it and checks its
// imports and exports, so a broken or changed module is refused whatever an entry
// says, and the cached manifest is parsed and checked exactly as a fresh one is.
//
// Entries are untrusted input: another process may have written or damaged the
// directory. An entry is read only if it is a regular file within [MaxEntryBytes],
// decodes strictly, names the key it is stored under (the file name is the key's
// digest, so an entry copied to another module's name is refused) and its manifest
// matches its own sha256. Anything else is logged and ignored, and the real describe
// then writes a good entry in its place. Entries are written atomically (a temporary
// file renamed into place), mode 0600 in a directory of mode 0700. A hit marks its
// entry used, and [Open] removes entries unused for [MaxAge], so that the entries of
// old builds and old modules do not pile up.
//
// A forged entry that passes these checks can only claim a manifest, which the host
// checks as it checks a guest's own; the compiled machine code in the same directory
// is trusted far more than that.
package manifests

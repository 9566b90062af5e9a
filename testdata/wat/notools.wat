;; A guest that declares no tools, like a Go plugin that registers its tools in main()
;; instead of init(): it loads, and check warns naming the init() rule. Its initial
;; memory, 40 pages (2.5 MiB), is over a memory_mib of 2.
(module
  (import "mcpwh" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 40)
  (data (i32.const 0) "{\"tools\":[]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $output_write (i32.const 0) (i32.const 12)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32) (i32.const 1)))

;; Unbounded recursion: mcpwh_call recurses until the stack overflows.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"deep\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 59)) drop (i32.const 0))
  (func $recurse (param $n i64) (result i64)
    (i64.add (call $recurse (i64.add (local.get $n) (i64.const 1))) (i64.const 1)))
  (func (export "mcpwh_call") (result i32)
    (drop (call $recurse (i64.const 0)))
    (i32.const 0)))

;; Output flood: "big" writes 2 MiB of output (over the default 1 MiB limit); "grow"
;; grows memory until memory.grow fails and reports how many pages it got.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "input_read" (func $in (param i32 i32) (result i32)))
  (memory (export "memory") 40)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"big\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 58)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    ;; 2 MiB starting at 64 KiB: inside the 40-page (2.5 MiB) memory.
    (call $out (i32.const 65536) (i32.const 2097152)) drop
    (i32.const 0)))

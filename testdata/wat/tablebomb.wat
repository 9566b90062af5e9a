;; A guest that declares a funcref table of 100 million elements and no maximum: wazero
;; would allocate 800 MB of Go heap for it in every instance, outside the memory limit.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table 100000000 funcref)
  (data (i32.const 0) "{\22tools\22:[{\22name\22:\22bomb\22,\22inputSchema\22:{\22type\22:\22object\22}}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $out (i32.const 0) (i32.const 59)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32) (i32.const 0)))

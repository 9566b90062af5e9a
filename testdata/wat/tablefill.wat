;; A guest with a funcref table of 60 million elements (458 MiB of Go heap in wazero,
;; within a memory_mib of 512) whose call asks for input and waits for the answer, so
;; that many instances, each holding its table, live at once.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "request" (func $request (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table 60000000 60000000 funcref)
  (data (i32.const 0) "{\22tools\22:[{\22name\22:\22hold\22,\22inputSchema\22:{\22type\22:\22object\22}}]}")
  (data (i32.const 200) "elicit")
  (data (i32.const 208) "{\22message\22:\22Go on?\22,\22requestedSchema\22:{\22type\22:\22object\22,\22properties\22:{}}}")
  (data (i32.const 512) "{\22content\22:[{\22type\22:\22text\22,\22text\22:\22held\22}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $out (i32.const 0) (i32.const 59)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (drop (call $request (i32.const 200) (i32.const 6) (i32.const 208) (i32.const 72)))
    (drop (call $out (i32.const 512) (i32.const 43)))
    (i32.const 0)))

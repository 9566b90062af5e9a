;; A guest that never returns: mcpwh_call spins forever without calling the host.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 98)) drop (i32.const 0))
  (data (i32.const 0) "{\"tools\":[{\"name\":\"spin\",\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"optional\"}}]}")
  (func (export "mcpwh_call") (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))

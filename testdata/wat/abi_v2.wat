;; A guest built for a future ABI version.
(module
  (memory (export "memory") 1)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 2))
  (func (export "mcpwh_describe") (result i32) (i32.const 0))
  (func (export "mcpwh_call") (result i32) (i32.const 0)))

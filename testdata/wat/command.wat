;; A WASI command (exports _start), not a reactor.
(module
  (memory (export "memory") 1)
  (func (export "_start"))
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32) (i32.const 0))
  (func (export "mcpwh_call") (result i32) (i32.const 0)))

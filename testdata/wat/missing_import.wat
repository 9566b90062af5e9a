;; A guest that imports a host function the host does not provide.
(module
  (import "mcpwh" "launch_missiles" (func $launch (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32) (i32.const 0))
  (func (export "mcpwh_call") (result i32) (call $launch (i32.const 1))))

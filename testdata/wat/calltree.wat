;; A guest wazero cannot interrupt in process: mcpwh_call starts an exponential tree of
;; calls (2^62 of them) without a single loop, so no loop back-edge ever checks the
;; context. Only killing the process that runs it stops it.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 98)) drop (i32.const 0))
  (data (i32.const 0) "{\"tools\":[{\"name\":\"tree\",\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"optional\"}}]}")
  (func $tree (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 1))
      (else
        (i32.add
          (call $tree (i32.sub (local.get $n) (i32.const 1)))
          (call $tree (i32.sub (local.get $n) (i32.const 1)))))))
  (func (export "mcpwh_call") (result i32)
    (drop (call $tree (i32.const 62)))
    (i32.const 0)))

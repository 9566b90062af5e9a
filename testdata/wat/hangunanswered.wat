;; A guest that hangs only when its request for input fails: mcpwh_call asks for
;; input; given an answer it returns "answered", otherwise (the request unavailable or
;; failed) it starts an exponential tree of calls that no loop back-edge interrupts, so
;; that only killing its worker process stops it. Tests use it to hang one call among
;; others that wait for their answers in the same plugin.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "request" (func $request (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"ask\",\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"optional\"}}]}")
  (data (i32.const 200) "elicit")
  (data (i32.const 208) "{\"message\":\"Go on?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}")
  (data (i32.const 400) "{\"content\":[{\"type\":\"text\",\"text\":\"answered\"}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 97)) drop (i32.const 0))
  (func $tree (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 1))
      (else
        (i32.add
          (call $tree (i32.sub (local.get $n) (i32.const 1)))
          (call $tree (i32.sub (local.get $n) (i32.const 1)))))))
  (func (export "mcpwh_call") (result i32)
    (if (i32.lt_s (call $request (i32.const 200) (i32.const 6) (i32.const 208) (i32.const 72)) (i32.const 0))
      (then (drop (call $tree (i32.const 62)))))
    (drop (call $out (i32.const 400) (i32.const 47)))
    (i32.const 0)))

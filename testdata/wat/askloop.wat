;; A guest that asks for input and then loops for ever, whatever the answer: its time
;; limit must stop it, and the time it spent waiting for the answer must not count.
;; (askspin does the same with a call tree, which wazero cannot interrupt.)
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "request" (func $request (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"ask\",\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"optional\"}}]}")
  (data (i32.const 200) "elicit")
  (data (i32.const 208) "{\"message\":\"Go on?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 97)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (drop (call $request (i32.const 200) (i32.const 6) (i32.const 208) (i32.const 72)))
    (loop $spin (br $spin))
    (i32.const 0)))

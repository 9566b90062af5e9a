;; A v1.1 guest whose answer to every call is its own input document: a resource
;; read, a prompt and a completion then come back malformed (the host must refuse them
;; with a clear error and keep serving); the manifest declares one of each feature.
(module
  (import "mcpwh" "input_len" (func $input_len (result i32)))
  (import "mcpwh" "input_read" (func $input_read (param i32 i32) (result i32)))
  (import "mcpwh" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}}],\"resources\":[{\"uri\":\"test://echo\",\"name\":\"echo\"}],\"resourceTemplates\":[{\"uriTemplate\":\"test://echo/{x}\",\"name\":\"echoes\"}],\"prompts\":[{\"name\":\"echo\",\"arguments\":[{\"name\":\"text\"}]}],\"completions\":true}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $output_write (i32.const 0) (i32.const 258)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (local $n i32)
    (local.set $n (call $input_read (i32.const 4096) (i32.const 65536)))
    (drop (call $output_write (i32.const 4096) (local.get $n)))
    (i32.const 0)))

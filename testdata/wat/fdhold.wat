;; A guest that holds open files: mcpwh_call opens the file "f.txt" of its first
;; granted directory 16 times, traps if an open fails, then asks for input and returns
;; "held" once answered, keeping the 16 descriptors until its instance ends. Tests use
;; it to exhaust a worker's open files.
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "request" (func $request (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"hold\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 200) "elicit")
  (data (i32.const 208) "{\"message\":\"Go on?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}")
  (data (i32.const 400) "{\"content\":[{\"type\":\"text\",\"text\":\"held\"}]}")
  (data (i32.const 500) "f.txt")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 59)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (local $i i32)
    (loop $open
      (if (i32.ne (call $path_open (i32.const 3) (i32.const 0) (i32.const 500) (i32.const 5)
                    (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 600))
                  (i32.const 0))
        (then unreachable))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $open (i32.lt_u (local.get $i) (i32.const 16))))
    (drop (call $request (i32.const 200) (i32.const 6) (i32.const 208) (i32.const 72)))
    (drop (call $out (i32.const 400) (i32.const 43)))
    (i32.const 0)))

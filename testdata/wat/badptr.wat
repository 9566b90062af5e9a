;; Hands every host function pointers and lengths outside its memory, huge lengths, a
;; bad log level and invalid UTF-8/JSON, and reports the status codes it got back as
;; its output: {"content":[{"type":"text","text":"s0 s1 ..."}]}.
(module
  (import "mcpwh" "input_len" (func $input_len (result i32)))
  (import "mcpwh" "input_read" (func $input_read (param i32 i32) (result i32)))
  (import "mcpwh" "output_write" (func $output_write (param i32 i32) (result i32)))
  (import "mcpwh" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "mcpwh" "progress" (func $progress (param f64 f64 i32 i32) (result i32)))
  (import "mcpwh" "request" (func $request (param i32 i32 i32 i32) (result i32)))
  (import "mcpwh" "reply_read" (func $reply_read (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $pos (mut i32) (i32.const 1024))
  ;; 0: "elicit"  8: invalid UTF-8 bytes  16: "[1]" (JSON, not an object)  24: "{}"
  (data (i32.const 0) "elicit")
  (data (i32.const 8) "\ff\fe")
  (data (i32.const 16) "[1]")
  (data (i32.const 24) "{}")
  (data (i32.const 32) "{\"tools\":[{\"name\":\"probe\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $output_write (i32.const 32) (i32.const 60)) drop (i32.const 0))
  ;; append writes status s as a decimal (with sign) and a space at $pos.
  (func $append (param $s i32) (local $n i32) (local $d i32)
    (if (i32.lt_s (local.get $s) (i32.const 0))
      (then
        (i32.store8 (global.get $pos) (i32.const 45))
        (global.set $pos (i32.add (global.get $pos) (i32.const 1)))
        (local.set $s (i32.sub (i32.const 0) (local.get $s)))))
    ;; statuses here are single digits; larger values are written as 9
    (if (i32.gt_u (local.get $s) (i32.const 9)) (then (local.set $s (i32.const 9))))
    (i32.store8 (global.get $pos) (i32.add (i32.const 48) (local.get $s)))
    (i32.store8 (i32.add (global.get $pos) (i32.const 1)) (i32.const 32))
    (global.set $pos (i32.add (global.get $pos) (i32.const 2))))
  (func (export "mcpwh_call") (result i32)
    (call $append (call $input_read (i32.const 65530) (i32.const 100)))       ;; -1
    (call $append (call $input_read (i32.const -1) (i32.const 10)))           ;; -1
    (call $append (call $log (i32.const 1) (i32.const 65000) (i32.const 1000)))  ;; -1
    (call $append (call $log (i32.const 9) (i32.const 0) (i32.const 1)))      ;; -3
    (call $append (call $log (i32.const 1) (i32.const 8) (i32.const 2)))      ;; 0 (invalid UTF-8 is replaced)
    (call $append (call $progress (f64.const 1) (f64.const 2) (i32.const 8) (i32.const 2)))  ;; -3
    (call $append (call $progress (f64.const 1) (f64.const 2) (i32.const 0) (i32.const -1))) ;; -2
    (call $append (call $request (i32.const 0) (i32.const 6) (i32.const 16) (i32.const 3)))  ;; -3
    (call $append (call $request (i32.const 0) (i32.const 6) (i32.const 65535) (i32.const 100))) ;; -1
    (call $append (call $request (i32.const 8) (i32.const 2) (i32.const 24) (i32.const 2)))  ;; -3
    (call $append (call $reply_read (i32.const 0) (i32.const 10)))           ;; -8
    (call $append (call $output_write (i32.const 0) (i32.const -1)))         ;; -2
    (call $append (call $output_write (i32.const 65535) (i32.const 2)))      ;; -1
    ;; wrap the statuses in a result document
    (call $finish)
    (i32.const 0))
  (data (i32.const 512) "{\"content\":[{\"type\":\"text\",\"text\":\"")
  (data (i32.const 600) "\"}]}")
  (func $finish (local $len i32)
    ;; layout at 2048: prefix(35) + statuses + suffix(4)
    (memory.copy (i32.const 2048) (i32.const 512) (i32.const 35))
    (local.set $len (i32.sub (global.get $pos) (i32.const 1024)))
    (memory.copy (i32.const 2083) (i32.const 1024) (local.get $len))
    (memory.copy (i32.add (i32.const 2083) (local.get $len)) (i32.const 600) (i32.const 4))
    (drop (call $output_write (i32.const 2048) (i32.add (local.get $len) (i32.const 39))))))

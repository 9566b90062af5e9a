;; Host-call flood: "flood" calls log a million times, then progress a million times,
;; then writes a result whose text is the status of the last log call.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "mcpwh" "progress" (func $progress (param f64 f64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[{\"name\":\"flood\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 100) "spam")
  ;; {"content":[{"type":"text","text":"-?"}]}: the status digit is patched in at 236
  (data (i32.const 200) "{\"content\":[{\"type\":\"text\",\"text\":\"-?\"}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 60)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (local $i i32) (local $s i32)
    (loop $l
      (local.set $s (call $log (i32.const 1) (i32.const 100) (i32.const 4)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1000000))))
    (local.set $i (i32.const 0))
    (loop $p
      (drop (call $progress (f64.convert_i32_u (local.get $i)) (f64.const 0) (i32.const 0) (i32.const 0)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $p (i32.lt_u (local.get $i) (i32.const 1000000))))
    ;; write the last log status (a single digit after '-') into the text
    (i32.store8 (i32.const 236) (i32.add (i32.const 48) (i32.sub (i32.const 0) (local.get $s))))
    (drop (call $out (i32.const 200) (i32.const 41)))
    (i32.const 0)))

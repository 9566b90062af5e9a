;; A guest whose non-exported mutable globals (i32, i64, f64) are what one call could
;; leave for the next: each call reports whether they still hold their initial values
;; (0), then changes them. Its instances are restored between calls (the sandbox
;; exports the globals to reach them), so they must read 0 every time.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $a (mut i32) (i32.const 0))
  (global $b (mut i64) (i64.const 0))
  (global $c (mut f64) (f64.const 0))
  (data (i32.const 0) "{\"tools\":[{\"name\":\"probe\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 256) "{\"content\":[{\"type\":\"text\",\"text\":\"a=0 b=0 c=0\"}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $out (i32.const 0) (i32.const 60)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (i32.store8 (i32.const 293) (i32.add (i32.const 48) (i32.ne (global.get $a) (i32.const 0))))
    (i32.store8 (i32.const 297) (i32.add (i32.const 48) (i64.ne (global.get $b) (i64.const 0))))
    (i32.store8 (i32.const 301) (i32.add (i32.const 48) (f64.ne (global.get $c) (f64.const 0))))
    (drop (call $out (i32.const 256) (i32.const 50)))
    (global.set $a (i32.const 1))
    (global.set $b (i64.const -1))
    (global.set $c (f64.const 2.5))
    (i32.const 0)))

;; A guest that sleeps past any time limit and then succeeds: mcpwh_call asks WASI
;; poll_oneoff for a 10 s relative clock, then writes a result ("woke") and returns 0. The host
;; ends the sleep at the call's deadline; the call must still fail with the time limit.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (data (i32.const 0) "{\"tools\":[{\"name\":\"nap\",\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"optional\"}}]}")
  (data (i32.const 200) "{\"content\":[{\"type\":\"text\",\"text\":\"woke\"}]}")
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 97)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    ;; One subscription at 1024 (48 bytes): userdata 0, tag 0 (clock), clock id 1
    ;; (monotonic) at +16, timeout 10 s at +24, precision 0, flags 0 (relative).
    (i32.store8 (i32.const 1032) (i32.const 0))
    (i32.store (i32.const 1040) (i32.const 1))
    (i64.store (i32.const 1048) (i64.const 10000000000))
    ;; The event goes to 2048, the number of events to 2096.
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 2096)))
    (call $out (i32.const 200) (i32.const 43)) drop
    (i32.const 0)))

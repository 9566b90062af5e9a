;; A guest whose call grows its linear memory in 1 MiB steps (16 pages) until
;; memory.grow fails, writing to every 4 KiB page it gains, then asks for input (so that
;; a caller can hold many such instances at once; the answer is ignored) and answers
;; with the number of 64 KiB pages it ended with:
;; {"content":[{"type":"text","text":"<pages>"}]}.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (import "mcpwh" "request" (func $request (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\22tools\22:[{\22name\22:\22grow\22,\22inputSchema\22:{\22type\22:\22object\22}}]}")
  (data (i32.const 128) "elicit")
  (data (i32.const 136) "{\22message\22:\22Go on?\22,\22requestedSchema\22:{\22type\22:\22object\22,\22properties\22:{}}}")
  (data (i32.const 256) "{\22content\22:[{\22type\22:\22text\22,\22text\22:\22")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $out (i32.const 0) (i32.const 59)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (local $a i32) (local $end i32) (local $n i32) (local $p i32)
    (block $full
      (loop $grow
        (br_if $full (i32.eq (memory.grow (i32.const 16)) (i32.const -1)))
        (local.set $end (i32.shl (memory.size) (i32.const 16)))
        (local.set $a (i32.sub (local.get $end) (i32.const 1048576)))
        (loop $touch
          (i32.store8 (local.get $a) (i32.const 1))
          (local.set $a (i32.add (local.get $a) (i32.const 4096)))
          (br_if $touch (i32.lt_u (local.get $a) (local.get $end))))
        (br $grow)))
    (drop (call $request (i32.const 128) (i32.const 6) (i32.const 136) (i32.const 72)))
    ;; The digits of memory.size, written backwards from offset 320 down.
    (local.set $n (memory.size))
    (local.set $p (i32.const 320))
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $digit (local.get $n)))
    ;; Move them to follow the prefix (35 bytes at 256), then close the document.
    (memory.copy (i32.const 291) (local.get $p) (i32.sub (i32.const 320) (local.get $p)))
    (local.set $end (i32.add (i32.const 291) (i32.sub (i32.const 320) (local.get $p))))
    (i32.store (local.get $end) (i32.const 0x7d5d7d22)) ;; "}]} in little-endian: 22 7d 5d 7d
    (drop (call $out (i32.const 256) (i32.sub (i32.add (local.get $end) (i32.const 4)) (i32.const 256))))
    (i32.const 0)))

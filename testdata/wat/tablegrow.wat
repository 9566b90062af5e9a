;; A guest with a small funcref table and no maximum whose call grows the table by 100
;; million elements: it answers "grown" if table.grow succeeded, "refused" if it
;; returned -1.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $t 1 funcref)
  (data (i32.const 0) "{\22tools\22:[{\22name\22:\22grow\22,\22inputSchema\22:{\22type\22:\22object\22}}]}")
  (data (i32.const 256) "{\22content\22:[{\22type\22:\22text\22,\22text\22:\22grown\22}]}")
  (data (i32.const 512) "{\22content\22:[{\22type\22:\22text\22,\22text\22:\22refused\22}]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (drop (call $out (i32.const 0) (i32.const 59)))
    (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (if (i32.eq (table.grow $t (ref.null func) (i32.const 100000000)) (i32.const -1))
      (then (drop (call $out (i32.const 512) (i32.const 46))))
      (else (drop (call $out (i32.const 256) (i32.const 44)))))
    (i32.const 0)))

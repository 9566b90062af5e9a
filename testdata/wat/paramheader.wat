;; A plugin whose tool "route" mirrors three arguments into HTTP headers (x-mcp-header,
;; SEP-2243): region (string) as Mcp-Param-Region, count (integer) as Mcp-Param-Count and
;; dry (boolean) as Mcp-Param-Dry-Run. The host checks each header against the body on
;; every HTTP call (host/mcpheader.go); the guest answers every call with a fixed result.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 251)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (call $out (i32.const 251) (i32.const 45)) drop (i32.const 0))
  (data (i32.const 0) "{\"tools\":[{\"name\":\"route\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},\"dry\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry-Run\"},\"note\":{\"type\":\"string\"}}}}]}")
  (data (i32.const 251) "{\"content\":[{\"type\":\"text\",\"text\":\"routed\"}]}"))

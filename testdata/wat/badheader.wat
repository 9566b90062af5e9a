;; A plugin whose tool "header" puts x-mcp-header on an object property, which go-sdk's
;; AddTool panics on. The plugin's load check (plugins/mcpheader.go) refuses it first,
;; naming the property, and the others are served.
;; Its manifest is the data at 0; mcpwh_call answers every call with a fixed result.
(module
  (import "mcpwh" "output_write" (func $out (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32)
    (call $out (i32.const 0) (i32.const 165)) drop (i32.const 0))
  (func (export "mcpwh_call") (result i32)
    (call $out (i32.const 165) (i32.const 42)) drop (i32.const 0))
  (data (i32.const 0) "{\"tools\":[{\"name\":\"ok\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"header\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\",\"x-mcp-header\":\"X-A\"}}}}]}")
  (data (i32.const 165) "{\"content\":[{\"type\":\"text\",\"text\":\"ran\"}]}"))

// Package guest is the Go SDK for mcp-wasmhost plugins: a tool is a typed Go function,
// and the package speaks the guest ABI v1 (docs/ABI.md) for it.
//
// A plugin registers its tools in init (a Wasm reactor never runs main) and is built as
// a WASI reactor:
//
//	package main
//
//	import guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
//
//	type greetArgs struct {
//		Name string `json:"name" jsonschema:"who to greet"`
//	}
//
//	func init() {
//		guest.Add(guest.Tool{Name: "greet", Description: "Says hello."},
//			func(c *guest.Call, in greetArgs) (*guest.Result, error) {
//				return guest.Text("Hello, " + in.Name + "!"), nil
//			})
//	}
//
//	func main() {}
//
//	// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o greet.wasm .
//
// The input schema is inferred from the argument type (json tags name the properties,
// a `jsonschema:"..."` tag describes one, omitempty makes it optional) unless
// Tool.InputSchema gives one. The host validates arguments against it before the
// function runs.
//
// Inside a call, [Call] reaches the client: [Call.Log], [Call.Progress],
// [Call.Elicit] (ask the user for input), [Call.Sample] (ask the client's model),
// [Call.ResourceUpdated] (tell subscribed clients a resource changed) and
// [Call.CloseStream] (let an HTTP client reconnect for the result later).
//
// Besides tools, a plugin may serve resources ([AddResource], [AddResourceTemplate]),
// prompts ([AddPrompt]) and argument completions ([HandleCompletion]): ABI v1.1, an
// additive revision the host sends as the method form of the call input.
//
// The package is its own module with no dependencies, so a plugin's go.sum holds
// nothing else (docs/AUTHORING.md: depending on it from another module).
//
// The package builds for the host too, so tools can be unit-tested with `go test`:
// [CallTool] checks the arguments against the tool's input schema as the server does
// ([CheckArguments]) and runs a registered tool in-process against a [TestHost] that records logs
// and progress and answers elicitations; [ReadResource], [GetPrompt] and [Complete]
// do the same for the other features.
package guest

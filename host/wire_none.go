package host

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// noTasks is MCP 2026-07-28 without the Tasks extension: a request that did not
// declare it. Nothing runs as a task: a tool that may runs in the request, one that
// must is -32021, and so are the extension's methods; 2025-11-25's are -32601.
type noTasks struct{}

func (noTasks) stateless() bool   { return true }
func (noTasks) roundTrips() bool  { return true }
func (noTasks) pushesInput() bool { return false }

// taskParam ignores a legacy params.task.
func (noTasks) taskParam(*taskParams, error) (*taskParams, error) { return nil, nil }

func (noTasks) callTool(ctx context.Context, _ *Server, req *mcp.CallToolRequest, t *plugins.Tool, c caller, _ *taskParams, next mcp.MethodHandler) (mcp.Result, error) {
	if t.TaskSupport == plugins.TaskRequired {
		return nil, missingExtension("tool %q runs only as a task; declare the %q extension in the client capabilities", t.Name, extensionID)
	}
	return c.complete(next(ctx, "tools/call", req))
}

// created is never asked of this wire, which starts no task; it renders as the
// line does.
func (noTasks) created(t tasks.Task) mcp.Result { return toExt(t, "task") }

func (noTasks) inputRequired(reqs mcp.InputRequestMap, state string) *inputRequiredResult {
	return &inputRequiredResult{ResultType: "input_required", InputRequests: reqs, RequestState: state}
}

func (noTasks) listTools(r *mcp.ListToolsResult, _ *plugins.Catalog) mcp.Result { return r }

func (noTasks) get(context.Context, *Server, caller, *taskIDParams) (mcp.Result, error) {
	return nil, extensionMethod("tasks/get")
}

func (noTasks) cancel(context.Context, *Server, caller, *taskIDParams) (mcp.Result, error) {
	return nil, extensionMethod("tasks/cancel")
}

func (noTasks) update(context.Context, *Server, caller, *updateParams) (mcp.Result, error) {
	return nil, extensionMethod("tasks/update")
}

func (noTasks) result(context.Context, *Server, *mcp.ServerSession, caller, *taskIDParams) (mcp.Result, error) {
	return nil, removedByExtension("tasks/result")
}

func (noTasks) list(context.Context, *Server, caller, *listTasksParams) (mcp.Result, error) {
	return nil, removedByExtension("tasks/list")
}

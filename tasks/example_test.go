package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// A task asks its requester for input, gets the answer, and completes.
func Example() {
	ctx := context.Background()
	m := tasks.NewManager(tasks.Options{})
	defer m.Close(ctx)

	asked := make(chan *tasks.Input, 1)
	t, _ := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		answer, err := h.Ask(ctx, "elicitation/create", json.RawMessage(`{"message":"Proceed?"}`), func(in *tasks.Input) { asked <- in })
		if err != nil {
			return nil, "", &tasks.Error{Code: -32603, Message: err.Error()}
		}
		return answer, "", nil
	})
	in := <-asked
	now, _ := m.Get(ctx, "local", t.ID)
	fmt.Println(now.Status, in.Key, in.Method)

	m.Answer("local", t.ID, in.Key, tasks.Reply{Result: json.RawMessage(`{"action":"accept"}`)})
	done, _ := m.Wait(ctx, "local", t.ID)
	fmt.Println(done.Status, string(done.Result))
	// Output:
	// input_required input-1 elicitation/create
	// completed {"action":"accept"}
}

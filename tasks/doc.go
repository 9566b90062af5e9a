// Package tasks is the task model: the one place that knows what a task is, whichever
// wire form (MCP 2025-11-25 Tasks, or the io.modelcontextprotocol/tasks extension) a
// client speaks. It knows nothing of Wasm or transports: it runs any [Func].
//
// A [Manager] creates tasks with unguessable IDs (192 bits from crypto/rand), runs each
// on a context the task owns (it outlives the request that created it; only Cancel and
// Close end it), allows only legal transitions (working <-> input_required, then one of
// the terminal states completed, failed, cancelled, which are final), binds every task
// to its owner (another owner's task does not exist for you), limits unfinished tasks
// per owner, and purges terminal tasks after their TTL. An unfinished task never
// expires, so a waiter never sees an invented status.
//
// A running task asks its requester for input with [Handle.Ask]: the request is kept
// under a key that is never reused within the task, the task is input_required until
// every pending request is answered, and the first answer wins ([Manager.Answer]), so
// the same request may be delivered on several streams.
//
//	m := tasks.NewManager(tasks.Options{MaxTTL: time.Hour})
//	defer m.Close(ctx)
//	t, err := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
//		return json.RawMessage(`{"ok":true}`), "", nil
//	})
//	done, err := m.Wait(ctx, "local", t.ID)
//
// Tasks live in a [Store]: [MemoryStore] here; a durable one plugs in behind the same
// interface. A Store that several server processes share (tasks/sqlstore) is also
// [Shared]: the Manager then records which instance runs each task, polls a task
// another instance runs, and sends that instance the task's cancel and the answers to
// its input requests as [Signal]s, so that every instance answers for every task. A
// Shared store that is also a [Waker] (PostgreSQL's NOTIFY) wakes the Manager when
// signals arrive; on others it polls every [SignalPoll]. store.go lists the optional
// interfaces a Store may have, which a wrapper of a Store must keep visible.
package tasks

// Package boltstore is the durable tasks.Store: one bbolt file that survives restarts
// and crashes. Every Put is committed and synced before it returns (concurrent Puts
// share one commit), so a task handle a client was given, and a result once reported
// complete, are never lost.
//
// Opening a store fails the tasks that were still running when the last process died,
// with RestartMessage: their guests' memory is gone, and a task must never hang in
// working forever. A file that is locked by another process, corrupt, truncated or
// unreadable is an error that names it; nothing is reset or deleted. bbolt maps more
// than a file holds, so a truncated file would be a SIGBUS inside it: Open first checks
// the meta pages, root and freelist against the file's size (check.go), then reads the
// whole store through with memory faults turned into errors.
//
//	st, err := boltstore.Open(filepath.Join(dataDir, "tasks.db"))
//	m := tasks.NewManager(tasks.Options{Store: st})
package boltstore

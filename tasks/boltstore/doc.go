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
// Expired tasks are purged in batches, one transaction each (Purge). The pages they
// free go back to bbolt's freelist and are reused by later tasks, so the file stays
// at its high-water mark: bbolt never shrinks a file in place. To shrink it, stop the
// server and compact the file offline (bbolt's own tool: `bbolt compact -o new.db
// tasks.db`, then move new.db over tasks.db); the server does not do it at start,
// since that would copy the whole store while it holds the lock.
//
//	st, err := boltstore.Open(filepath.Join(dataDir, "tasks.db"))
//	m := tasks.NewManager(tasks.Options{Store: st})
package boltstore

// Package audit writes the audit trail: one JSON line (a [Record]) per tools/call,
// resources/read and prompts/get, and per task status change, saying who ran what,
// with which outcome, how long it took, and which host calls the guest made (its
// requests for input by kind, the egress origins it reached). Arguments appear only
// as the SHA-256 of their canonical JSON: never a value, never a token. A request
// refused before it was read (authn: 401, 403, 429) gets a [MethodRefused] line
// through [Log.Refused], at most [MaxRefusedPerSecond] a second (the rest are
// counted on the next one), so that a flood of bad tokens cannot rotate the other
// lines away.
//
// A [Log] never makes a call wait: [Log.Record] puts the line on a bounded queue
// and returns; a full queue drops it, counts it and, once the writer catches up,
// logs the count and writes a "dropped" line in its place. One goroutine writes
// the lines (buffered), rotates the file by size (path.1 is the newest of Keep old
// files), and fsyncs in batches, every SyncInterval. A failed write is logged and
// the writer goes on; [Log.Close] drains the queue, syncs and joins the writer.
//
// docs/AUDIT.md describes a line field by field and how to ship the file.
package audit

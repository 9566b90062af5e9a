package worker

import (
	"encoding/binary"
	"time"
)

// A worker tells the supervisor how much linear memory its live instances hold
// (sandbox.Module.LiveMemory: running and parked calls) in a memory frame, every
// memoryEvery when it has changed, so that the guest memory gauge
// (Module.LiveMemory, mcpwh_live_memory_bytes) shows a worker call while it runs or
// waits for an answer. Calls send nothing more for it: the frame costs one write a
// second at most, none while the count stays the same.
const (
	memoryEvery = time.Second
	// maxLiveMemory bounds the count a memory frame may carry: far beyond what any
	// worker's calls hold (4 GiB each at most).
	maxLiveMemory = 1 << 48
)

// reportMemory sends a memory frame every memoryEvery while the count differs from
// the last one sent, until stop closes or a send fails.
func (c *child) reportMemory(stop <-chan struct{}) {
	t := time.NewTicker(memoryEvery)
	defer t.Stop()
	var sent int64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if n := c.mod.LiveMemory(); n != sent {
			if c.w.send(frameMemory, 0, binary.BigEndian.AppendUint64(nil, uint64(n))) != nil {
				return
			}
			sent = n
		}
	}
}

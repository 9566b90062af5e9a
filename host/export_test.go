package host

import (
	"context"
	"fmt"
)

// WaitTask waits until owner's task id has status; for input_required, until its
// requests for input are registered too. For the golden transcripts (wire_test.go),
// which must not poll over the wire they record.
func (s *Server) WaitTask(ctx context.Context, owner, id, status string) error {
	for {
		t, inputs, changed, err := s.tasks.Watch(ctx, owner, id)
		if err != nil {
			return err
		}
		if string(t.Status) == status && (status != "input_required" || len(inputs) > 0) {
			return nil
		}
		if changed == nil {
			return fmt.Errorf("task %s is %s and will not become %s", id, t.Status, status)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("task %s is %s, not %s: %w", id, t.Status, status, ctx.Err())
		}
	}
}

// SetHotPath turns the hot path (hotpath.go) on or off: off, every request goes
// through the SDK.
func (s *Server) SetHotPath(on bool) { s.noHotPath = !on }

// HotServed is how many requests the hot path answered.
func (s *Server) HotServed() int64 { return s.hotServed.Load() }

package worker

import "context"

// LoadSized is Load for a worker sized for concurrency calls at once.
func (s *Supervisor) LoadSized(ctx context.Context, spec Spec, concurrency int) (*Module, error) {
	spec.MaxConcurrent = concurrency
	return s.Load(ctx, spec)
}

// RaceEnabled reports whether the race detector is on: workers then have no
// address-space limit.
const RaceEnabled = raceEnabled

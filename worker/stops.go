package worker

// StopReason classifies why a worker process stopped, for metrics: a small fixed
// set, where the log line keeps the whole story.
type StopReason uint8

// Reasons a worker stops. The first reason given wins, as with the log's text.
const (
	StopExited   StopReason = iota // it exited or crashed on its own
	StopStuck                      // killed: a call did not stop at its time limit or cancellation
	StopProtocol                   // killed: it broke the frame protocol (malformed or too many frames)
	StopStart                      // it failed to start: init not written, load failed, start timed out or cancelled
	StopMemory                     // the Go runtime in it ran out of memory
	StopUnloaded                   // stopped on purpose: the plugin was unloaded
	numStopReasons
)

var stopNames = [numStopReasons]string{"exited", "stuck", "protocol", "start", "out_of_memory", "unloaded"}

// String is the reason's label in metrics.
func (r StopReason) String() string {
	if r < numStopReasons {
		return stopNames[r]
	}
	return "unknown"
}

// StopReasons lists every reason, for a metric that shows each from the start.
func StopReasons() []StopReason {
	out := make([]StopReason, numStopReasons)
	for i := range out {
		out[i] = StopReason(i)
	}
	return out
}

// Events hears of the lives of a plugin's worker processes. Its methods are called
// from the supervisor's goroutines and must not block.
type Events interface {
	// WorkerStarted: a worker of plugin is ready for calls.
	WorkerStarted(plugin string)
	// WorkerKilled: the server killed a worker of plugin (not an exit of its own).
	WorkerKilled(plugin string, why StopReason)
	// WorkerRestarted: a worker of plugin that stopped for why is being replaced.
	WorkerRestarted(plugin string, why StopReason)
}

// noEvents is the Events of a Supervisor given none.
type noEvents struct{}

func (noEvents) WorkerStarted(string)               {}
func (noEvents) WorkerKilled(string, StopReason)    {}
func (noEvents) WorkerRestarted(string, StopReason) {}

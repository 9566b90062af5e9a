// Package storetest is the contract every tasks.Store passes, as one test suite:
// [Run] drives a store directly (create, get and replace; lists, cursors and owner
// isolation; expiry and purges in batches) and through a tasks.Manager (its bounds,
// cancels and owner checks), and, on a tasks.Shared store, two instances of it
// (Update under contention, pending inputs and signals, answers and cancels across
// instances, nonces, the Waker's wake-up, the cross-instance cancel delay).
//
// Each store's own test calls it with a function that opens a new, empty store:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) (tasks.Store, func() tasks.Store) {
//			return tasks.NewMemoryStore(), nil
//		})
//	}
package storetest

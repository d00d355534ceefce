// Package storetest is the conformance suite every [store.Store] passes.
// A backend's test calls [Run] once:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Features{Snapshots: true}, func(t *testing.T) store.Store {
//			return memory.New()
//		})
//	}
//
// Each case is a named subtest (VersionConflict, GlobalOrderMonotonic,
// ConcurrentAppend, ReadAfterCancel, …) and is meant to run under -race.
// Capabilities a backend may lack are switched on in [Features]; the cases
// for a capability that is switched off are skipped with a message saying so.
package storetest

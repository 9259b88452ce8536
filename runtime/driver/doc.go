// Package driver defines the small interfaces a GPU backend implements so that
// package runtime can drive it, the way database/sql/driver serves database/sql.
//
// A backend adapts one vendor binding (hip+hsa, cuda, metal) and nothing more:
// it reports what the driver said, classified, and never decides policy. The
// semantics every user relies on — events that land or fail exactly once,
// errors that are never consumed by a read, the fault monitor, the watchdog,
// the device-lost state, argument validation — live once in package runtime.
//
// Calls into a Device and the objects it returns may come from any goroutine;
// an implementation makes each call safe under its vendor's threading rules
// (for example by locking the OS thread and making its context current).
package driver

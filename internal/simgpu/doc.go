// Package simgpu is a simulated GPU backend for tests. It implements
// runtime/driver with Go functions as kernels, streams that run their work in
// order on their own goroutines, and switches to inject what real drivers do
// badly: synchronous launch rejections, asynchronous sticky faults, host
// callbacks that never come, callbacks from threads Go did not create, out of
// band (HSA-style) fault events, hangs, and a Close that blocks.
//
// It proves the runtime's state machine, never GPU behaviour: the real
// backends are checked on real hardware (see docs/gpu-faults.md).
package simgpu

// Package scheduler serves generation requests from many callers through one
// continuously batched model.Batch: one goroutine owns the batch, admits
// queued requests between steps (up to a batch limit), steps every running
// sequence, turns tokens into text (model.TextStream: end of sequence, stop
// strings, max tokens, a full context) and hands each request its text as
// it is released, without ever blocking on a slow reader.
//
// Failure semantics, written once here for every front end (server/ is one):
//
//   - A failed step fails only the requests in that step (the sequences
//     model.BatchError names); the others keep stepping, and later requests
//     are served while the device is usable.
//   - A step error that wraps runtime.ErrDeviceLost or runtime.ErrDeviceFault,
//     or a model whose DeviceLost reports the fault, loses the device: every
//     running and queued request ends with an *UnavailableError wrapping the
//     fault, and so does every later Submit, unless Config.Fallback gives a
//     model (the CPU) to serve on from then on.
//   - After Config.MaxFailedSteps consecutive failed steps the scheduler
//     stops admitting work (Submit and queued requests get an
//     *UnavailableError); a restart clears it.
//   - A request whose context ends leaves the batch before the next step,
//     freeing its slot and its KV cache.
//   - A full queue is ErrQueueFull at once.
package scheduler

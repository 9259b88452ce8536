// Package scheduler serves generation requests from many callers through one
// continuously batched model.Batch: one goroutine owns the batch, admits
// queued requests between steps (up to a batch limit), steps every running
// sequence, turns tokens into text (model.TextStream: end of sequence, stop
// strings, max tokens, a full context) and hands each request its text as
// it is released, without ever blocking on a slow reader. Prompts are fed
// in slices of at most Config.PrefillBudget tokens a step, in the same steps
// as the running sequences' decode, the prompts with the fewest tokens left
// first: a short request that arrives behind long ones gets its first token
// after about one slice of their prefill, not after all of it.
//
// Failure semantics, written once here for every front end (server/ is one):
//
//   - A step that failed retryably (the runtime rejected a launch, the
//     device is usable and no sequence advanced: model.BatchError's
//     Retryable) runs again, up to Config.StepRetries times, and gives the
//     tokens it would have given; out of tries, it fails every request in
//     the batch.
//   - Any other failed step fails only the requests in that step (the
//     sequences model.BatchError names); the others keep stepping, and later
//     requests are served while the device is usable.
//   - A step error that wraps runtime.ErrDeviceLost or runtime.ErrDeviceFault,
//     or a model whose DeviceLost reports the fault, loses the device: every
//     running and queued request ends with an *UnavailableError wrapping the
//     fault, and so does every later Submit, unless Config.Fallback gives a
//     model (the CPU) to serve on from then on.
//   - After Config.MaxFailedSteps consecutive failed steps (a retried step
//     that then ran counts as none) the scheduler
//     stops admitting work (Submit and queued requests get an
//     *UnavailableError); a restart clears it.
//   - A request whose context ends leaves the batch before the next step,
//     freeing its slot and its KV cache.
//   - A full queue is ErrQueueFull at once.
package scheduler

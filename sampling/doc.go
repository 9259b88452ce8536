// Package sampling draws tokens from logits: the Gumbel-max and dual-pivot
// rejection sampler kernels' ports, typed refusal and routing, and their CPU
// references and fallbacks. docs/sampling.md is the full contract.
//
// Start with NewSampler(dev) and Sampler.Sample for logits on a GPU, or
// Argpartition for logits on the host. The kernels' direct entry points
// (Sampler.GumbelMax, Sampler.Rejection) refuse a backend without a port
// with a *NoKernelPortError (errors.Is ErrNoKernelPort).
//
// Which function to call:
//   - logits on a GPU: NewSampler(dev) once per device, then Sampler.Sample
//     per step. It routes each call to a kernel or the CPU fallback, and only
//     the tokens (4 bytes per row) need come back to the host. Preload
//     loads the kernels' module at once, where the first draw would
//     otherwise wait for the driver to compile it.
//   - logits on the host: Argpartition (top-k, top-p, min-p) or Categorical
//     (temperature only).
//   - GumbelMax and Rejection (Sampler methods) are the kernels' direct entry
//     points; GumbelMaxCPU and RejectionCPU their bit-exact CPU mirrors, for
//     tests and references.
//   - penalties (logit_bias, presence, frequency, repetition): Penalties.Apply
//     changes a row on the host, by a sequence's History, before it is
//     drawn; there is no kernel for them yet.
//   - logprobs: Logprobs is a row's log-softmax at the drawn token and its
//     k best tokens, from the logits before penalties and temperature.
//
// In brief:
//
// Input is logits [B, V] (row-major float32 here; f32, bf16 or f16 for the
// kernels), output one uint32 token per row. NaN counts as -inf. A row with
// +inf logits samples its lowest +inf index; a row with no finite or +inf
// logit is invalid: kernels write token 0 with StatusInvalidRow, CPU functions
// write token 0 and return an *InvalidLogitsError (errors.Is
// ErrInvalidLogits) naming the rows, after writing every output. Temperature
// 0 is greedy (argmax, lowest index on ties).
//
// One distribution for kernels and fallbacks alike: each active filter
// decides membership on the untempered row, independently and
// tie-inclusively (top-k keeps a token when fewer than k tokens are strictly
// more probable; top-p when the probability mass strictly more probable is
// below p; min-p when its probability is at least min_p times the largest);
// the kept set is their intersection; the draw is weighted by the tempered
// row over that set. Parameters outside their ranges are errors
// (ErrInvalidParameter, *ParameterError); the kernels also read them
// defensively as "off" and never write an index >= V.
//
// Randomness is Philox4x32-10 keyed by the call's Key, counters keyed by
// (row, token), so a draw does not depend on the launch shape: element i of
// row r uses word i&3 of philox(key, {i>>2, 0, r, 0}); rejection round n uses
// word 0 of philox(key, {n, 1, r, 0}); the CPU fallbacks' single uniform per
// row is word 0 of philox(key, {0, 2, r, 0}). A word w becomes
// u = ((w>>9) + 0.5) * 2^-23, strictly inside (0, 1). KeyFromSeed derives a
// key per generation step.
//
// CPU functions: GumbelMaxCPU and RejectionCPU reproduce the kernels bit for
// bit (same uniforms, float32 arithmetic, reduction order) and are what GPU
// results are checked against; Categorical and Argpartition are the
// production CPU samplers (float64, one uniform per row).
//
// Kernels live in kernels/src/sampling.cu (HIP and CUDA from one text) and
// kernels/src/sampling.metal. GumbelMaxPorts and RejectionPorts are the port
// tables; a direct entry point on a backend without a port returns a
// *NoKernelPortError (errors.Is ErrNoKernelPort) naming the entry point and
// the fallback, before any port is chosen. A Router picks kernel or fallback
// per call (HIPGO_SAMPLING_GUMBEL and HIPGO_SAMPLING_REJECTION, read once per
// process, turn routing off), counts and logs each outcome once, and checks
// earlier rejection launches' convergence flags when they have landed,
// without ever waiting for them.
package sampling

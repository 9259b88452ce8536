// sampling.cu: the Gumbel-max and dual-pivot rejection samplers. One text,
// compiled as HIP for every AMDGPU target and as CUDA for NVPTX (portable.h),
// and on the host by sampling's emulation test (SAMPLING_HOST_SHIM names the
// header that stands in for portable.h there). sampling.metal is the same
// code in MSL, kept line for line parallel to this file.
//
// The contract (Go: package sampling, SEMANTICS.md) in brief:
//   - logits [B, V] with row stride ld (elements); NaN counts as -inf.
//   - Philox4x32-10 keyed by (key0, key1). Element i of row r uses word
//     (i & 3) of philox({i >> 2, 0, r, 0}); round n of the rejection sampler
//     uses word 0 of philox({n, 1, r, 0}). Nothing depends on launch shape.
//   - u = ((w >> 9) + 0.5) * 2^-23, strictly inside (0,1).
//   - Every kernel writes a status per row (SP_STATUS_*); no kernel ever
//     writes a token >= V.
//   - The Go functions GumbelMaxCPU and RejectionCPU reproduce these kernels
//     bit for bit (same formulas, same float32 rounding, same reduction
//     order), except the Gumbel scores on NVPTX, which use the hardware log
//     (sp_gumbel_score): same order, tokens equal but at near-ties.
#ifdef SAMPLING_HOST_SHIM
#include SAMPLING_HOST_SHIM
#else
#include "portable.h"
#endif
#include "sampling_common.h"

// Threads per block are compile-time constants (no implicit-argument
// builtins, so the code objects carry no hidden kernel arguments). The host
// emulation test rebuilds with smaller values; Go's mirrors take the same
// numbers.
#ifndef SP_GUMBEL_THREADS
#define SP_GUMBEL_THREADS 512
#endif
#ifndef SP_REJ_THREADS
#define SP_REJ_THREADS 1024
#endif

// SP_TRACE(tag, bits): the host emulation test records intermediate values
// (bit patterns) from thread 0 and compares them with the Go mirror's; it
// compiles to nothing everywhere else.
#ifndef SP_TRACE
#define SP_TRACE(tag, bits) ((void)0)
#endif

// =====================================================================
// Gumbel-max: argmax_i (logit_i / T + g_i), g_i = -log(-log u_i).
// One launch, gumbel_max_{f32,bf16,f16}: grid splits * B blocks (1-D; block
// b handles split b % splits of row b / splits), SP_GUMBEL_THREADS threads.
// The row's groups of four elements are cut into `splits` contiguous slices;
// each block keeps (max score, lowest index) and reduces it in shared
// memory. With one split the block writes the row's token; otherwise it
// writes a partial, and the row's last block to finish merges the row's
// partials (gumbel_fused). (max, lowest index) is associative and
// commutative, so the result does not depend on splits or thread count.
// On NVPTX the scores are in log2 units, shifted by a constant
// (sp_gumbel_score): the same order, not the same values.
//
// inv_temp: 1/T for 0 < inv_temp < +inf; anything else (the host passes 0
// for T = 0 or when 1/T overflows) means greedy: score = logit, no noise.
// =====================================================================
// gumbel_score4: the scores of group g's four elements (the logits
// themselves when greedy) and their NaN-ignoring maximum (a NaN score never
// wins).
template <bool Greedy>
DEVICE float gumbel_score4(const float* x, uint32_t g, uint32_t r, float inv_temp, uint32_t key0,
                           uint32_t key1, float* sc) {
  if (Greedy) {
#pragma unroll
    for (uint32_t q = 0; q < 4; ++q) sc[q] = x[q];
  } else {
    const sp_u4 w = sp_philox(g, 0u, r, 0u, key0, key1);
    sc[0] = sp_gumbel_score(x[0], inv_temp, w.x);
    sc[1] = sp_gumbel_score(x[1], inv_temp, w.y);
    sc[2] = sp_gumbel_score(x[2], inv_temp, w.z);
    sc[3] = sp_gumbel_score(x[3], inv_temp, w.w);
  }
  return __builtin_fmaxf(__builtin_fmaxf(sc[0], sc[1]), __builtin_fmaxf(sc[2], sc[3]));
}

// gumbel_fold: folds group g's scores (maximum m) into the thread's running
// (best score, lowest index). Within a thread indices only grow, so
// "strictly greater" keeps the lowest index of a tie, and NaN and the -inf
// that stands for elements past V never win: no check per element. Only
// when the group beats the running best is its lowest index among equals
// looked up. A thread whose scores are all -inf keeps (-inf, SP_NONE). The
// result is a sequential scan's, element by element.
DEVICE void gumbel_fold(const float* sc, float m, uint32_t g, float& bv, uint32_t& bi) {
  if (m > bv) {
    bv = m;
    bi = g * 4u + (sc[0] == m ? 0u : sc[1] == m ? 1u : sc[2] == m ? 2u : 3u);
  }
}

// gumbel_scan: one thread's groups g, g + NT, g + 2NT, ... below g1. The
// main loop takes them in pairs, each loadable as one vector (row aligned,
// all four elements below V): the pair's Philox chains interleave and hide
// each other's multiply latency, and the next pair's loads are issued
// before this pair is scored, so memory latency hides behind the Philox
// rounds and logs (with no load in flight a warp waited for every one). The second loop takes what is left:
// the last few full groups, the row's last, partial group, or every group
// of a row not aligned for vector loads. Counters are 32-bit:
// g1 <= ceil(V/4) < 2^30.
// gumbel_pair: scores groups g and g + NT (both full, in x0 and x1) and
// folds them. The two Philox chains are independent, so they interleave.
template <bool Greedy>
DEVICE void gumbel_pair(const float (*x)[4], uint32_t g, uint32_t r, float inv_temp,
                        uint32_t key0, uint32_t key1, float& bv, uint32_t& bi) {
  const uint32_t NT = SP_GUMBEL_THREADS;
  float sa[4], sb[4];
  const float ma = gumbel_score4<Greedy>(x[0], g, r, inv_temp, key0, key1, sa);
  const float mb = gumbel_score4<Greedy>(x[1], g + NT, r, inv_temp, key0, key1, sb);
  gumbel_fold(sa, ma, g, bv, bi);
  gumbel_fold(sb, mb, g + NT, bv, bi);
}

template <typename In, bool Greedy>
DEVICE void gumbel_scan(const In* row, uint32_t V, bool vec, uint32_t r, uint32_t gfirst,
                        uint32_t g1, float inv_temp, uint32_t key0, uint32_t key1, float& bv,
                        uint32_t& bi) {
  const uint32_t NT = SP_GUMBEL_THREADS;
  const uint32_t gfull = vec ? (g1 < V / 4u ? g1 : V / 4u) : 0u;
  uint32_t g = gfirst;
  if (g + NT < gfull) {
    // Two pair buffers used in turn (unrolled by hand: a copy from one
    // buffer to the other cost a move per value on the multiply pipe).
    float a[2][4], b[2][4];
    sp_load4_full(row, g, a[0]);
    sp_load4_full(row, g + NT, a[1]);
    for (;;) {
      const bool more = g + 3u * NT < gfull;  // the next pair is full
      if (more) {
        sp_load4_full(row, g + 2u * NT, b[0]);
        sp_load4_full(row, g + 3u * NT, b[1]);
      }
      gumbel_pair<Greedy>(a, g, r, inv_temp, key0, key1, bv, bi);
      g += 2u * NT;
      if (!more) break;
      const bool more2 = g + 3u * NT < gfull;
      if (more2) {
        sp_load4_full(row, g + 2u * NT, a[0]);
        sp_load4_full(row, g + 3u * NT, a[1]);
      }
      gumbel_pair<Greedy>(b, g, r, inv_temp, key0, key1, bv, bi);
      g += 2u * NT;
      if (!more2) break;
    }
  }
  for (; g < g1; g += NT) {
    float x[4], sc[4];
    sp_load4_raw(row, V, g, vec, x);
    const float m = gumbel_score4<Greedy>(x, g, r, inv_temp, key0, key1, sc);
    gumbel_fold(sc, m, g, bv, bi);
  }
}

// gumbel_block_best: block blk's slice of its row (split s of row r),
// reduced to (sv[0], si[0]): the best score and its lowest index, or
// (-inf, SP_NONE) for a slice with no finite or +inf score. Returns false,
// for the whole block, when the block has no row.
template <typename In>
DEVICE bool gumbel_block_best(const In* logits, uint32_t B, uint32_t V, uint32_t ld,
                              float inv_temp, uint32_t key0, uint32_t key1, uint32_t splits,
                              uint32_t& r, uint32_t& s, float* sv, uint32_t* si) {
  const uint32_t t = thread_idx_x();
  const uint32_t blk = block_idx_x();
  if (splits == 0) return false;
  r = blk / splits;
  s = blk - r * splits;
  if (r >= B) return false;  // whole block: no barrier is skipped by part of it
  const In* row = logits + (uint64_t)r * ld;
  const bool vec = sp_row_vec(row);
  const bool greedy = !(inv_temp > 0.0f && inv_temp <= SP_FLT_MAX);
  const uint32_t ngroups = V / 4u + (V % 4u != 0);
  const uint32_t per = ngroups / splits + (ngroups % splits != 0);
  const uint64_t g0 = (uint64_t)s * per;
  const uint64_t g1w = g0 + per;
  const uint32_t g1 = g1w < ngroups ? (uint32_t)g1w : ngroups;
  const uint32_t first = g0 < g1 ? (uint32_t)g0 + t : g1;  // an empty slice scans nothing

  float bv = -SP_INF;
  uint32_t bi = SP_NONE;
  if (greedy) {
    gumbel_scan<In, true>(row, V, vec, r, first, g1, 0.0f, key0, key1, bv, bi);
  } else {
    gumbel_scan<In, false>(row, V, vec, r, first, g1, sp_gumbel_scale(inv_temp), key0, key1, bv, bi);
  }
  sp_block_argmax<SP_GUMBEL_THREADS>(sv, si, t, bv, bi);
  return true;
}

// gumbel_write_row: a row whose best score is -inf (no finite or +inf
// logit, or every score overflowed to -inf) gets token 0 and
// SP_STATUS_INVALID_ROW.
DEVICE void gumbel_write_row(float bv, uint32_t bi, uint32_t V, uint32_t* token, uint32_t* status) {
  const bool valid = bv > -SP_INF && bi < V;
  *token = valid ? bi : 0u;
  *status = valid ? SP_STATUS_OK : SP_STATUS_INVALID_ROW;
}

// gumbel_fused: the whole draw in one launch. Each block finds its slice's
// best (gumbel_block_best). With splits == 1 it writes the row's token at
// once; otherwise it writes its partial (part_val/part_idx[r * splits + s]),
// and the row's last block to finish (counted in arrivals[r]) merges the
// row's partials and puts arrivals[r] back to 0, so every launch finds the
// counters at 0 (the caller zeroes them once, at allocation). One launch
// instead of a partial and a merge kernel halves the host's launch cost;
// on the GPU the two took the same time.
template <typename In>
DEVICE void gumbel_fused(const In* logits, uint32_t B, uint32_t V, uint32_t ld, float inv_temp,
                         uint32_t key0, uint32_t key1, uint32_t splits, float* part_val,
                         uint32_t* part_idx, uint32_t* arrivals, uint32_t* tokens,
                         uint32_t* status, float* sv, uint32_t* si, uint32_t* last) {
  const uint32_t t = thread_idx_x();
  // The next launch may be scheduled now (it waits for this one before it
  // reads or writes memory); this one waits for the kernel before it, which
  // may have written the logits or still be reading the tokens.
  grid_launch_dependents();
  grid_dependency_wait();
  uint32_t r, s;
  if (!gumbel_block_best(logits, B, V, ld, inv_temp, key0, key1, splits, r, s, sv, si)) return;
  if (splits == 1) {
    if (t == 0) gumbel_write_row(sv[0], si[0], V, tokens + r, status + r);
    return;
  }
  if (t == 0) {
    part_val[(uint64_t)r * splits + s] = sv[0];
    part_idx[(uint64_t)r * splits + s] = si[0];
    grid_fence();  // the partial is visible before the arrival is counted
    *last = grid_atomic_add(arrivals + r, 1u) == splits - 1u;
  }
  block_sync();
  if (!*last) return;  // the same for the whole block
  grid_fence();
  float bv = -SP_INF;
  uint32_t bi = SP_NONE;
  for (uint32_t j = t; j < splits; j += SP_GUMBEL_THREADS) {
    const float v = sp_clean(grid_load_f32(part_val + (uint64_t)r * splits + j));
    const uint32_t i = grid_load_u32(part_idx + (uint64_t)r * splits + j);
    if (sp_better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  sp_block_argmax<SP_GUMBEL_THREADS>(sv, si, t, bv, bi);
  if (t == 0) {
    gumbel_write_row(sv[0], si[0], V, tokens + r, status + r);
    arrivals[r] = 0u;
  }
}

// 512 threads and room for two blocks per multiprocessor (64 registers on
// NVPTX): measured fastest on an H200 against 256 threads with 4-6 blocks
// and 512 with 3 (tools/gpubench/gumbel_variants.py; docs/sampling.md).
#ifndef SP_GUMBEL_MIN_BLOCKS
#define SP_GUMBEL_MIN_BLOCKS 2
#endif
#define SP_GUMBEL_FUSED(NAME, TYPE)                                                                \
  KERNEL KBOUNDS_OCC(SP_GUMBEL_THREADS, SP_GUMBEL_MIN_BLOCKS) void NAME(                           \
      const TYPE* logits, uint32_t B, uint32_t V, uint32_t ld, float inv_temp, uint32_t key0,     \
      uint32_t key1, uint32_t splits, float* part_val, uint32_t* part_idx, uint32_t* arrivals,    \
      uint32_t* tokens, uint32_t* status) {                                                      \
    __shared__ float sv[SP_GUMBEL_THREADS];                                                        \
    __shared__ uint32_t si[SP_GUMBEL_THREADS];                                                     \
    __shared__ uint32_t last;                                                                      \
    gumbel_fused<TYPE>(logits, B, V, ld, inv_temp, key0, key1, splits, part_val, part_idx,        \
                       arrivals, tokens, status, sv, si, &last);                                  \
  }

SP_GUMBEL_FUSED(gumbel_max_f32, float)
SP_GUMBEL_FUSED(gumbel_max_bf16, sp_bf16)
SP_GUMBEL_FUSED(gumbel_max_f16, sp_f16)

// =====================================================================
// Dual-pivot rejection sampling with top-k, top-p and min-p.
// Grid: B blocks, SP_REJ_THREADS (1024) threads: one block per row, because
// the interval state persists across sweeps and there is no grid barrier;
// 1024 threads give one row the most loads in flight and ALU lanes a block
// can have. Thread t owns groups t, t + NT, t + 2NT, ... (elements 4g..4g+3),
// which fixes every per-thread sum and the CDF order.
//
// params [B, 4] float: temperature, top_k, top_p, min_p. Out-of-range values
// are treated as off: top_k outside [1, V), top_p outside (0, 1), min_p
// outside (0, 1]; temperature NaN, negative or +inf means 1; temperature 0,
// or 1/T overflowing, means greedy.
//
// Work is in y = max - logit >= 0 (y = +inf for -inf/NaN logits), the
// filter weight f = exp(-y) (untempered, relative to the max) and the draw
// weight d = exp(-y/T). "Strictly more probable than i" is y_j < y_i.
//   keep_k(i): #{j : y_j < y_i} < k
//   keep_p(i): sum{f_j : y_j < y_i} < top_p * S,  S = sum of all f
//   keep_m(i): f_i >= min_p   (the max has f = 1)
//   K = intersection of the active ones; the draw is d-weighted over K.
// fail(v) := (k on and #{y < v} >= k) or (p on and sum{f : y < v} >= top_p*S).
// fail is monotone (false at v = 0, and fail(v) implies fail(w) for w > v,
// since both the count and the float sum of non-negative terms in a fixed
// order grow with v), and for a token i, keep_k and keep_p <=> !fail(y_i).
//
// Invariant: {y <= lo} ⊆ Kkp ⊆ {y < bound}, Kkp = keep_k and keep_p.
// Start lo = 0 (the max is always kept), bound = +inf. Each round draws a
// candidate c from the proposal P = {y < bound} ∩ keep_m weighted by d
// (inverse CDF with one uniform). If y_c <= lo or neither top-k nor top-p is
// on, c is in K: accept. Otherwise one sweep computes the count and f-mass
// below pivot0 = y_c and below pivot1 = the bit-pattern midpoint of lo and
// y_c (integer math on the float bits: exact, order-preserving for y >= 0),
// plus each thread's d-mass of the two possible next proposals.
//   !fail(pivot0): c is in K: accept.
//   fail(pivot0), fail(pivot1):  bound = pivot1.
//   fail(pivot0), !fail(pivot1): lo = pivot1, bound = pivot0.
// Both keep the invariant (monotonicity of fail).
//
// Exactness. At every round the proposal P is d-weighted over a superset of
// K (the invariant, and keep_m is part of P), and a candidate is accepted iff
// it is in K. Given the history, the round accepts token i in K with
// probability d_i / d(P) and stops with probability d(K) / d(P), so the
// accepted token is d_i / d(K): the target, whatever the earlier rounds did
// (their uniforms are independent Philox words). The pivots only shrink P.
//
// Termination. key = float bits; key(bound) - key(lo) starts at
// 0x7f800000 < 2^31 and at least halves on every rejection; at distance 1 no
// y lies strictly between, so P ⊆ {y <= lo} ⊆ Kkp and the next candidate is
// accepted: at most 31 rounds. max_rounds is clamped to [1, 32]; a row that
// has not accepted after max_rounds (only possible with max_rounds < 31)
// returns the argmax, which is always in K, with status UNCONVERGED and
// rounds = max_rounds.
//
// Passes over the row: one for the max, one for S and the first proposal
// masses, then per round one sweep (skipped when the candidate is accepted
// without statistics) plus the candidate search, which reads only the
// crossing thread's groups (V / NT elements). The sweep computes weights
// only for the elements below pivot0, usually a handful: the exps of pass 2
// are most of a row's work.
// =====================================================================

// Per-element weights, computed identically in every pass.
struct sp_w {
  float y, f, d;
};

DEVICE sp_w sp_weights(float l, float M, float invT) {
  sp_w w;
  w.y = M - l;
  w.f = sp_exp(-w.y);
  w.d = invT == 1.0f ? w.f : sp_exp(-sp_mul(w.y, invT));
  return w;
}

template <typename In>
DEVICE void rejection(const In* logits, uint32_t B, uint32_t V, uint32_t ld,
                      const float* params, uint32_t key0, uint32_t key1, uint32_t max_rounds,
                      uint32_t* tokens, uint32_t* ok, uint32_t* rounds, float* sa, float* sb,
                      uint32_t* sc, uint32_t* sd, uint32_t* smu) {
  const uint32_t NT = SP_REJ_THREADS;
  const uint32_t t = thread_idx_x();
  const uint32_t r = block_idx_x();
  if (r >= B) return;
  const In* row = logits + (uint64_t)r * ld;
  const bool vec = sp_row_vec(row);
  const uint32_t ngroups = V / 4u + (V % 4u != 0);
  // Threads that own at least one group. Scans and sums only ever read
  // entries below this (the rest hold zeros), which keeps the Go mirror's
  // cost proportional to the row, not to NT.
  const uint32_t nact = ngroups < NT ? ngroups : NT;

  // ---- parameters, defensively ----
  const float T = params[(uint64_t)r * 4 + 0];
  const float kf = params[(uint64_t)r * 4 + 1];
  const float pp = params[(uint64_t)r * 4 + 2];
  const float mp = params[(uint64_t)r * 4 + 3];
  bool greedy = false;
  float invT = 1.0f;
  if (T == 0.0f) {
    greedy = true;
  } else if (T > 0.0f && T <= SP_FLT_MAX) {
    invT = 1.0f / T;
    if (!(invT <= SP_FLT_MAX)) greedy = true;
  }
  const bool k_on = kf >= 1.0f && kf < (float)V;
  const uint32_t k = k_on ? (uint32_t)kf : 0u;
  const bool p_on = pp > 0.0f && pp < 1.0f;
  const bool m_on = mp > 0.0f && mp <= 1.0f;
  const bool kp_on = k_on || p_on;
  const uint32_t cap = max_rounds < 1u ? 1u : (max_rounds > 32u ? 32u : max_rounds);

  // ---- pass 1: max and argmax (lowest index) ----
  // A group at a time: within a thread indices only grow, so a group
  // replaces the running best only when its maximum is strictly greater,
  // and then its lowest index holding that maximum is looked up (NaN and
  // elements past V load as -inf). A thread whose elements are all -inf
  // keeps its first element. The same (value, index) as an element-wise
  // sp_better scan, with a quarter of the compares.
  float bv = -SP_INF;
  uint32_t bi = SP_NONE;
  for (uint32_t g = t; g < ngroups; g += NT) {
    float x[4];
    sp_load4(row, V, g, vec, x);
    const float m = __builtin_fmaxf(__builtin_fmaxf(x[0], x[1]), __builtin_fmaxf(x[2], x[3]));
    if (m > bv) {
      bv = m;
      bi = g * 4u + (x[0] == m ? 0u : x[1] == m ? 1u : x[2] == m ? 2u : 3u);
    }
  }
  if (bi == SP_NONE && t < ngroups) bi = t * 4u;
  sa[t] = bv;
  sc[t] = bi;
  block_sync();
  sp_reduce_argmax<SP_REJ_THREADS>(sa, sc, t);
  const float M = sa[0];
  const uint32_t amax = sc[0];
  SP_TRACE('M', sp_f2u(M));
  SP_TRACE('A', amax);
  block_sync();

  if (!(M > -SP_INF) || amax >= V) {  // all -inf/NaN: invalid row
    if (t == 0) {
      tokens[r] = 0u;
      ok[r] = SP_STATUS_INVALID_ROW;
      rounds[r] = 0u;
    }
    return;
  }
  if (M == SP_INF || greedy) {  // +inf present (lowest +inf index), or T = 0
    if (t == 0) {
      tokens[r] = amax;
      ok[r] = SP_STATUS_OK;
      rounds[r] = 0u;
    }
    return;
  }

  // ---- pass 2: S = sum f, and this thread's mass of the first proposal ----
  // The element loops skip the past-V tail with continue, never break: a
  // loop that can exit early was left rolled, x[] went to local memory (a
  // store and a load per element on NVPTX) and the four exps to one copy.
  float lo = 0.0f;
  float bound = SP_INF;
  float S_t = 0.0f, D_t = 0.0f;
  for (uint32_t g = t; g < ngroups; g += NT) {
    float x[4];
    sp_load4(row, V, g, vec, x);
    #pragma unroll
    for (uint32_t q = 0; q < 4; ++q) {
      if (g * 4u + q >= V) continue;  // not break: see pass 2
      const sp_w w = sp_weights(x[q], M, invT);
      S_t = S_t + w.f;
      if (w.y < bound && (!m_on || w.f >= mp)) D_t = D_t + w.d;
    }
  }
  sa[t] = S_t;
  block_sync();
  sp_reduce_sum<SP_REJ_THREADS>(sa, t);
  const float target_p = pp * sa[0];
  SP_TRACE('S', sp_f2u(sa[0]));
  block_sync();

  // ---- rounds ----
  uint32_t cand = amax;
  bool accepted = false;
  uint32_t used = 0;
  for (uint32_t n = 0; n < cap; ++n) {
    used = n + 1;
    // Which thread's groups hold the draw: inclusive scan of the proposal
    // masses, then the lowest thread whose prefix exceeds u * total. (A
    // float scan need not be monotone, so "lowest" is taken with an atomic
    // minimum rather than by looking at the neighbour.)
    if (t == 0) smu[0] = SP_NONE;
    sa[t] = D_t;
    block_sync();
    sp_scan_incl<SP_REJ_THREADS>(sa, t);
    const float total = sa[nact - 1];
    const float u = sp_uniform(sp_philox(n, 1u, r, 0u, key0, key1).x);
    const float target = sp_mul(u, total);
    if (t < nact && sa[t] > target) sp_atomic_min_u32(&smu[0], t);
    block_sync();
    const uint32_t tstar = smu[0];
    const float resid = tstar == SP_NONE ? 0.0f : target - (tstar == 0 ? 0.0f : sa[tstar - 1]);
    SP_TRACE('T', sp_f2u(total));
    SP_TRACE('U', sp_f2u(target));
    SP_TRACE('t', tstar);
    SP_TRACE('r', sp_f2u(resid));
    block_sync();

    // Candidate search in thread tstar's groups, NT groups at a time: scan
    // the group masses, take the lowest group where the running sum passes
    // resid, then walk its four elements. Rounding can make the walk fall
    // short: take the group's last element with weight. If no group is found
    // (u * total rounded up to total), take the argmax.
    cand = amax;
    if (tstar != SP_NONE) {
      const uint32_t ng = tstar < ngroups ? (ngroups - tstar) / NT + ((ngroups - tstar) % NT != 0) : 0u;
      float carry = 0.0f;
      for (uint32_t c0 = 0; c0 < ng; c0 += NT) {
        const uint32_t j = c0 + t;
        float wq[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float wj = 0.0f;
        uint32_t g = 0;
        if (j < ng) {
          g = tstar + j * NT;
          float x[4];
          sp_load4(row, V, g, vec, x);
          #pragma unroll
          for (uint32_t q = 0; q < 4; ++q) {
            if (g * 4u + q >= V) continue;  // not break: see pass 2
            const sp_w w = sp_weights(x[q], M, invT);
            if (w.y < bound && (!m_on || w.f >= mp)) wq[q] = w.d;
            wj = wj + wq[q];
          }
        }
        if (t == 0) {
          smu[1] = SP_NONE;
          smu[2] = SP_NONE;
        }
        sa[t] = wj;
        block_sync();
        sp_scan_incl<SP_REJ_THREADS>(sa, t);
        if (j < ng && carry + sa[t] > resid) sp_atomic_min_u32(&smu[1], t);
        block_sync();
        const uint32_t lane = smu[1];
        if (lane != SP_NONE) {
          if (t == lane) {
            float acc = t == 0 ? carry : carry + sa[t - 1];
            uint32_t pick = SP_NONE, last = SP_NONE;
            for (uint32_t q = 0; q < 4; ++q) {
              if (wq[q] > 0.0f) {
                last = g * 4u + q;
                acc = acc + wq[q];
                if (acc > resid) {
                  pick = last;
                  break;
                }
              }
            }
            smu[2] = pick != SP_NONE ? pick : last;
          }
          block_sync();
          if (smu[2] != SP_NONE) cand = smu[2];
          block_sync();
          break;
        }
        carry = carry + sa[(ng - c0 < NT ? ng - c0 : NT) - 1];
        block_sync();
      }
    }
    if (cand >= V) cand = amax;  // cannot happen; keeps every index in range
    SP_TRACE('c', cand);

    const float yc = M - sp_load1(row, cand);
    if (!kp_on || yc <= lo) {
      accepted = true;
      break;
    }

    // Pivot statistics.
    const float pv0 = yc;
    const uint32_t ka = sp_f2u(lo), kb = sp_f2u(yc);
    const float pv1 = sp_u2f(ka + (kb - ka) / 2u);
    float m0 = 0.0f, m1 = 0.0f, D0 = 0.0f, D1 = 0.0f;
    uint32_t c0n = 0, c1n = 0;
    for (uint32_t g = t; g < ngroups; g += NT) {
      float x[4];
      sp_load4(row, V, g, vec, x);
      #pragma unroll
      for (uint32_t q = 0; q < 4; ++q) {
        if (g * 4u + q >= V) continue;  // not break: see pass 2
        // Only elements below pivot0 count (pivot1 <= pivot0), and usually
        // few are: the weights (one or two exps) are computed for those
        // alone. The sums see the same terms in the same order.
        if (!(M - x[q] < pv0)) continue;
        const sp_w w = sp_weights(x[q], M, invT);
        const bool mok = !m_on || w.f >= mp;
        c0n += 1u;
        m0 = m0 + w.f;
        if (mok) D0 = D0 + w.d;
        if (w.y < pv1) {
          c1n += 1u;
          m1 = m1 + w.f;
          if (mok) D1 = D1 + w.d;
        }
      }
    }
    sa[t] = m0;
    sb[t] = m1;
    sc[t] = c0n;
    sd[t] = c1n;
    block_sync();
    sp_reduce_stats<SP_REJ_THREADS>(sa, sb, sc, sd, t);
    const float M0 = sa[0], M1 = sb[0];
    const uint32_t C0 = sc[0], C1 = sd[0];
    SP_TRACE('p', sp_f2u(pv1));
    SP_TRACE('0', sp_f2u(M0));
    SP_TRACE('1', sp_f2u(M1));
    SP_TRACE('k', C0);
    SP_TRACE('K', C1);
    block_sync();
    const bool fail0 = (k_on && C0 >= k) || (p_on && M0 >= target_p);
    if (!fail0) {
      accepted = true;
      break;
    }
    const bool fail1 = (k_on && C1 >= k) || (p_on && M1 >= target_p);
    if (fail1) {
      bound = pv1;
      D_t = D1;
    } else {
      lo = pv1;
      bound = pv0;
      D_t = D0;
    }
  }
  if (t == 0) {
    tokens[r] = accepted ? cand : amax;
    ok[r] = accepted ? SP_STATUS_OK : SP_STATUS_UNCONVERGED;
    rounds[r] = accepted ? used : cap;
  }
}

// Room for two blocks of 1024 per multiprocessor (32 registers on NVPTX):
// without it the unrolled element loops took 57 registers, one block per SM,
// and 512 rows of 128256 ran 25% slower on an H200 (docs/sampling.md).
#ifndef SP_REJ_MIN_BLOCKS
#define SP_REJ_MIN_BLOCKS 2
#endif
#define SP_REJ_BOUNDS KBOUNDS_OCC(SP_REJ_THREADS, SP_REJ_MIN_BLOCKS)
#define SP_REJECTION(NAME, TYPE)                                                                \
  KERNEL SP_REJ_BOUNDS void NAME(                                                             \
      const TYPE* logits, uint32_t B, uint32_t V, uint32_t ld, const float* params,           \
      uint32_t key0, uint32_t key1, uint32_t max_rounds, uint32_t* tokens, uint32_t* ok,     \
      uint32_t* rounds) {                                                                       \
    __shared__ float sa[SP_REJ_THREADS];                                                        \
    __shared__ float sb[SP_REJ_THREADS];                                                        \
    __shared__ uint32_t sc[SP_REJ_THREADS];                                                     \
    __shared__ uint32_t sd[SP_REJ_THREADS];                                                     \
    __shared__ uint32_t smu[3];                                                                 \
    rejection<TYPE>(logits, B, V, ld, params, key0, key1, max_rounds, tokens, ok, rounds, sa, \
                    sb, sc, sd, smu);                                                      \
  }

SP_REJECTION(rejection_f32, float)
SP_REJECTION(rejection_bf16, sp_bf16)
SP_REJECTION(rejection_f16, sp_f16)

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
//     bit for bit (same formulas, same float32 rounding, same reduction order).
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
#define SP_GUMBEL_THREADS 256
#endif
#ifndef SP_MERGE_THREADS
#define SP_MERGE_THREADS 256
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
// Grid: splits * B blocks (1-D; block b handles split b % splits of row
// b / splits), SP_GUMBEL_THREADS threads. The row's groups of four elements
// are cut into `splits` contiguous slices; each block keeps (max score, lowest
// index), reduces in shared memory and writes one partial. gumbel_max_merge
// reduces the partials of each row. (max, lowest index) is associative and
// commutative, so the result does not depend on splits or thread count.
//
// inv_temp: 1/T for 0 < inv_temp < +inf; anything else (the host passes 0
// for T = 0 or when 1/T overflows) means greedy: score = logit, no noise.
// =====================================================================
template <typename In>
DEVICE void gumbel_partial(const In* logits, uint32_t B, uint32_t V, uint32_t ld,
                           float inv_temp, uint32_t key0, uint32_t key1, uint32_t splits,
                           float* part_val, uint32_t* part_idx, float* sv, uint32_t* si) {
  const uint32_t NT = SP_GUMBEL_THREADS;
  const uint32_t t = thread_idx_x();
  const uint32_t blk = block_idx_x();
  if (splits == 0) return;
  const uint32_t r = blk / splits;
  const uint32_t s = blk - r * splits;
  if (r >= B) return;  // whole block: no barrier is skipped by part of it
  const In* row = logits + (uint64_t)r * ld;
  const bool vec = sp_row_vec(row);
  const bool greedy = !(inv_temp > 0.0f && inv_temp <= SP_FLT_MAX);
  const uint32_t ngroups = V / 4u + (V % 4u != 0);
  const uint32_t per = ngroups / splits + (ngroups % splits != 0);
  const uint64_t g0 = (uint64_t)s * per;
  const uint64_t g1w = g0 + per;
  const uint32_t g1 = g1w < ngroups ? (uint32_t)g1w : ngroups;

  float bv = -SP_INF;
  uint32_t bi = SP_NONE;
  for (uint64_t gg = g0 + t; gg < g1; gg += NT) {
    const uint32_t g = (uint32_t)gg;
    float x[4];
    sp_load4(row, V, g, vec, x);
    sp_u4 w = {0, 0, 0, 0};
    if (!greedy) w = sp_philox(g, 0u, r, 0u, key0, key1);
    for (uint32_t q = 0; q < 4; ++q) {
      const uint32_t i = g * 4u + q;
      if (i >= V) break;
      float sc = x[q];
      if (!greedy) sc = sp_mul(x[q], inv_temp) + sp_gumbel(sp_word(w, q));
      if (sp_better(sc, i, bv, bi)) {
        bv = sc;
        bi = i;
      }
    }
  }
  sv[t] = bv;
  si[t] = bi;
  block_sync();
  sp_reduce_argmax<SP_GUMBEL_THREADS>(sv, si, t);
  if (t == 0) {
    part_val[(uint64_t)r * splits + s] = sv[0];
    part_idx[(uint64_t)r * splits + s] = si[0];
  }
}

#define SP_GUMBEL_PARTIAL(NAME, TYPE)                                                          \
  KERNEL KBOUNDS(SP_GUMBEL_THREADS) void NAME(                                                 \
      const TYPE* logits, uint32_t B, uint32_t V, uint32_t ld, float inv_temp, uint32_t key0, \
      uint32_t key1, uint32_t splits, float* part_val, uint32_t* part_idx) {                  \
    __shared__ float sv[SP_GUMBEL_THREADS];                                                    \
    __shared__ uint32_t si[SP_GUMBEL_THREADS];                                                 \
    gumbel_partial<TYPE>(logits, B, V, ld, inv_temp, key0, key1, splits, part_val, part_idx,  \
                         sv, si);                                                              \
  }

SP_GUMBEL_PARTIAL(gumbel_max_partial_f32, float)
SP_GUMBEL_PARTIAL(gumbel_max_partial_bf16, sp_bf16)
SP_GUMBEL_PARTIAL(gumbel_max_partial_f16, sp_f16)

// gumbel_max_merge: grid B blocks, SP_MERGE_THREADS threads. A row whose best
// score is -inf (no finite or +inf logit, or every score overflowed to -inf)
// gets token 0 and SP_STATUS_INVALID_ROW.
KERNEL KBOUNDS(SP_MERGE_THREADS) void gumbel_max_merge(const float* part_val,
                                                       const uint32_t* part_idx, uint32_t B,
                                                       uint32_t V, uint32_t splits,
                                                       uint32_t* tokens, uint32_t* status) {
  __shared__ float sv[SP_MERGE_THREADS];
  __shared__ uint32_t si[SP_MERGE_THREADS];
  const uint32_t t = thread_idx_x();
  const uint32_t r = block_idx_x();
  if (r >= B) return;
  float bv = -SP_INF;
  uint32_t bi = SP_NONE;
  for (uint32_t j = t; j < splits; j += SP_MERGE_THREADS) {
    const float v = sp_clean(part_val[(uint64_t)r * splits + j]);
    const uint32_t i = part_idx[(uint64_t)r * splits + j];
    if (sp_better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  sv[t] = bv;
  si[t] = bi;
  block_sync();
  sp_reduce_argmax<SP_MERGE_THREADS>(sv, si, t);
  if (t == 0) {
    const bool valid = sv[0] > -SP_INF && si[0] < V;
    tokens[r] = valid ? si[0] : 0u;
    status[r] = valid ? SP_STATUS_OK : SP_STATUS_INVALID_ROW;
  }
}

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
// crossing thread's groups (V / NT elements).
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
  float bv = -SP_INF;
  uint32_t bi = SP_NONE;
  for (uint32_t g = t; g < ngroups; g += NT) {
    float x[4];
    sp_load4(row, V, g, vec, x);
    for (uint32_t q = 0; q < 4; ++q) {
      const uint32_t i = g * 4u + q;
      if (i < V && sp_better(x[q], i, bv, bi)) {
        bv = x[q];
        bi = i;
      }
    }
  }
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
  float lo = 0.0f;
  float bound = SP_INF;
  float S_t = 0.0f, D_t = 0.0f;
  for (uint32_t g = t; g < ngroups; g += NT) {
    float x[4];
    sp_load4(row, V, g, vec, x);
    for (uint32_t q = 0; q < 4; ++q) {
      if (g * 4u + q >= V) break;
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
          for (uint32_t q = 0; q < 4; ++q) {
            if (g * 4u + q >= V) break;
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
      for (uint32_t q = 0; q < 4; ++q) {
        if (g * 4u + q >= V) break;
        const sp_w w = sp_weights(x[q], M, invT);
        const bool mok = !m_on || w.f >= mp;
        if (w.y < pv0) {
          c0n += 1u;
          m0 = m0 + w.f;
          if (mok) D0 = D0 + w.d;
        }
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

#define SP_REJECTION(NAME, TYPE)                                                                \
  KERNEL KBOUNDS(SP_REJ_THREADS) void NAME(                                                     \
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

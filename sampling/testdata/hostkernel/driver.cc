// driver.cc: runs kernels/src/sampling.cu's kernels on the host, emulated
// (kernels/hostemu/hostemu.h), for sampling's hostkernel_test.go. Build:
//   clang++-19 -std=c++20 -O2 -pthread -fno-strict-aliasing -I kernels/hostemu \
//     -DSAMPLING_HOST_SHIM='"<abs>/kernels/hostemu/hostemu.h"' -I kernels/src \
//     [-DSP_GUMBEL_THREADS=n -DSP_REJ_THREADS=n] driver.cc
//
// Protocol: stdin holds jobs, stdout gets one result per job; all values are
// little-endian 32-bit words.
//   'G' job: dtype B V ld inv_temp(f32 bits) key0 key1 splits, then B*ld
//            elements (dtype 0 = f32 words, 1 = bf16, 2 = f16, as 16-bit
//            halves of ceil(B*ld/2) words) -> tokens[B] status[B]
//   'R' job: dtype B V ld key0 key1 max_rounds, params[4B] (f32 bits), then
//            the elements -> tokens[B] ok[B] rounds[B]
// A job word of 0 ends the input. Row data sits in a 64-byte aligned buffer
// at an element offset given by the "shift" word that follows the job word,
// so tests control which rows are aligned for vector loads.
// After the outputs above, a 'G' job also writes the partials (part_val bits
// and part_idx, B*splits each; written only when splits > 1) and the
// arrival counters (B, which the kernel must leave at 0), and an 'R' job
// each row's SP_TRACE record (a word count, then tag/value pairs).
//
// Built with -DSP_METAL (and -I kernels/hostemu/metal), it runs
// kernels/src/sampling.metal instead, through the wrappers below that pass
// the thread and threadgroup indices and the threadgroup buffers the way
// Metal does.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "fibers.h"  // kernels/hostemu: the block scheduler (hostemu::launch, tid, bid)

namespace hostemu {
void trace(uint32_t tag, uint32_t v);
}  // namespace hostemu
#define SP_TRACE(tag, bits)                                         \
  do {                                                              \
    if (hostemu::tid == 0) hostemu::trace((uint32_t)(tag), bits); \
  } while (0)

#ifdef SP_METAL
#include "sampling.metal"
#include "metal_fibers.h"  // kernels/hostemu: the barrier and shuffle on the fibers

template <class T>
static void run_gumbel(const T* logits, uint32_t B, uint32_t V, uint32_t ld, float inv_temp, uint32_t key0,
                       uint32_t key1, uint32_t splits, float* pv, uint32_t* pi, uint32_t* arrivals,
                       uint32_t* tok, uint32_t* st) {
  static float sv[SP_GUMBEL_THREADS];
  static uint32_t si[SP_GUMBEL_THREADS];
  static uint32_t last;
  gumbel_fused<T>(logits, B, V, ld, inv_temp, key0, key1, splits, pv, pi, (metal::atomic_uint*)arrivals, tok,
                  st, sv, si, &last, hostemu::tid, hostemu::bid);
}
template <class T>
static void run_rejection(const T* logits, uint32_t B, uint32_t V, uint32_t ld, const float* params,
                          uint32_t key0, uint32_t key1, uint32_t max_rounds, uint32_t* tok, uint32_t* ok,
                          uint32_t* rounds) {
  static float sa[SP_REJ_THREADS], sb[SP_REJ_THREADS];
  static uint32_t sc[SP_REJ_THREADS], sd[SP_REJ_THREADS];
  static metal::atomic_uint smu[4];
  rejection<T>(logits, B, V, ld, params, key0, key1, max_rounds, tok, ok, rounds, sa, sb, sc, sd, smu,
               hostemu::tid, hostemu::bid);
}
#else
#include "sampling.cu"
#define SP_RUN_GUMBEL(T, K)                                                                            \
  static void run_gumbel(const T* l, uint32_t B, uint32_t V, uint32_t ld, float it, uint32_t k0, uint32_t k1, \
                         uint32_t s, float* pv, uint32_t* pi, uint32_t* arr, uint32_t* tok, uint32_t* st) {  \
    K(l, B, V, ld, it, k0, k1, s, pv, pi, arr, tok, st);                                              \
  }
SP_RUN_GUMBEL(float, gumbel_max_f32)
SP_RUN_GUMBEL(sp_bf16, gumbel_max_bf16)
SP_RUN_GUMBEL(sp_f16, gumbel_max_f16)
static void run_rejection(const float* l, uint32_t B, uint32_t V, uint32_t ld, const float* p, uint32_t k0,
                          uint32_t k1, uint32_t mr, uint32_t* tok, uint32_t* ok, uint32_t* rounds) {
  rejection_f32(l, B, V, ld, p, k0, k1, mr, tok, ok, rounds);
}
static void run_rejection(const sp_bf16* l, uint32_t B, uint32_t V, uint32_t ld, const float* p, uint32_t k0,
                          uint32_t k1, uint32_t mr, uint32_t* tok, uint32_t* ok, uint32_t* rounds) {
  rejection_bf16(l, B, V, ld, p, k0, k1, mr, tok, ok, rounds);
}
static void run_rejection(const sp_f16* l, uint32_t B, uint32_t V, uint32_t ld, const float* p, uint32_t k0,
                          uint32_t k1, uint32_t mr, uint32_t* tok, uint32_t* ok, uint32_t* rounds) {
  rejection_f16(l, B, V, ld, p, k0, k1, mr, tok, ok, rounds);
}
#endif

namespace hostemu {
// Only thread 0 records and blocks run one at a time: no lock needed.
std::vector<std::vector<uint32_t>> traces;
void trace(uint32_t tag, uint32_t v) {
  traces[bid].push_back(tag);
  traces[bid].push_back(v);
}
}  // namespace hostemu

static uint32_t rd() {
  uint32_t v;
  if (fread(&v, 4, 1, stdin) != 1) {
    fprintf(stderr, "driver: short input\n");
    exit(2);
  }
  return v;
}

static float rdf() {
  uint32_t v = rd();
  float f;
  memcpy(&f, &v, 4);
  return f;
}

static void wr(const std::vector<uint32_t>& v) { fwrite(v.data(), 4, v.size(), stdout); }

// readElements returns a 64-byte aligned buffer holding the elements at an
// offset of `shift` elements.
static void* readElements(uint32_t dtype, uint64_t n, uint32_t shift) {
  const uint64_t esz = dtype == 0 ? 4 : 2;
  const uint64_t bytes = (n + shift) * esz;
  char* buf = (char*)aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  const uint64_t words = (n * esz + 3) / 4;
  std::vector<uint32_t> w(words);
  if (words && fread(w.data(), 4, words, stdin) != words) {
    fprintf(stderr, "driver: short element data\n");
    exit(2);
  }
  memcpy(buf + shift * esz, w.data(), n * esz);
  return buf + shift * esz;
}

int main() {
  for (;;) {
    const uint32_t job = rd();
    if (job == 0) break;
    const uint32_t shift = rd();
    if (job == 'G') {
      const uint32_t dtype = rd(), B = rd(), V = rd(), ld = rd();
      const float inv_temp = rdf();
      const uint32_t key0 = rd(), key1 = rd(), splits = rd();
      void* data = readElements(dtype, (uint64_t)B * ld, shift);
      std::vector<float> pv((uint64_t)B * splits, -1.0f);
      std::vector<uint32_t> pi((uint64_t)B * splits, 0xdeadbeef), arrivals(B, 0), tok(B, 0xdeadbeef),
          st(B, 0xdeadbeef);
      hostemu::launch(splits * B, SP_GUMBEL_THREADS, [&] {
        if (dtype == 0)
          run_gumbel((const float*)data, B, V, ld, inv_temp, key0, key1, splits, pv.data(), pi.data(),
                     arrivals.data(), tok.data(), st.data());
        else if (dtype == 1)
          run_gumbel((const sp_bf16*)data, B, V, ld, inv_temp, key0, key1, splits, pv.data(), pi.data(),
                     arrivals.data(), tok.data(), st.data());
        else
          run_gumbel((const sp_f16*)data, B, V, ld, inv_temp, key0, key1, splits, pv.data(), pi.data(),
                     arrivals.data(), tok.data(), st.data());
      });
      wr(tok);
      wr(st);
      std::vector<uint32_t> pvb(pv.size());
      memcpy(pvb.data(), pv.data(), 4 * pv.size());
      wr(pvb);
      wr(pi);
      wr(arrivals);
    } else if (job == 'R') {
      const uint32_t dtype = rd(), B = rd(), V = rd(), ld = rd();
      const uint32_t key0 = rd(), key1 = rd(), max_rounds = rd();
      std::vector<float> params(4 * (uint64_t)B);
      for (auto& p : params) p = rdf();
      void* data = readElements(dtype, (uint64_t)B * ld, shift);
      std::vector<uint32_t> tok(B, 0xdeadbeef), ok(B, 0xdeadbeef), rounds(B, 0xdeadbeef);
      hostemu::traces.assign(B, {});
      hostemu::launch(B, SP_REJ_THREADS, [&] {
        if (dtype == 0)
          run_rejection((const float*)data, B, V, ld, params.data(), key0, key1, max_rounds, tok.data(), ok.data(), rounds.data());
        else if (dtype == 1)
          run_rejection((const sp_bf16*)data, B, V, ld, params.data(), key0, key1, max_rounds, tok.data(), ok.data(), rounds.data());
        else
          run_rejection((const sp_f16*)data, B, V, ld, params.data(), key0, key1, max_rounds, tok.data(), ok.data(), rounds.data());
      });
      wr(tok);
      wr(ok);
      wr(rounds);
      for (const auto& tr : hostemu::traces) {
        wr({(uint32_t)tr.size()});
        wr(tr);
      }
    } else {
      fprintf(stderr, "driver: unknown job %u\n", job);
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}

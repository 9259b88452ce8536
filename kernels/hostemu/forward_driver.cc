// forward_driver.cc: runs kernels/src/forward.cu's kernels on the host under
// kernels/hostemu/hostemu.h, for package hostkern. Build (hostkern.Build
// does this):
//   clang++-19 -std=c++20 -O2 -pthread -ffp-contract=off \
//     -DHIPGO_HOST_SHIM='"<abs>/kernels/hostemu/hostemu.h"' -I kernels/src driver.cc
//
// Protocol, all words little-endian u32. stdin is a list of launches ended
// by a 0 word:
//   name_len, name bytes (padded to 4), grid, nargs, then per argument a kind
//   and its payload:
//     0 buffer: id, offset (bytes into the buffer), and, the first time an
//       id appears, shift (bytes past a 64-byte boundary), nbytes and the
//       bytes (padded to 4). Buffers live until the end of the input, so
//       later launches see what earlier ones wrote.
//     1 u32: the value;  2 f32: its bits;  3 null pointer
// At the end stdout gets every buffer's bytes (padded to 4) in id order
// (ids are 0, 1, 2, ... in order of first appearance). The kernel's block
// size is its FW_*_THREADS.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "forward.cu"

namespace {

struct Buffer {
  char* base;  // allocation
  uint32_t shift, nbytes;
};

struct Arg {
  uint32_t kind = 0, value = 0;
  void* ptr = nullptr;  // a buffer's data + offset, or null
};

uint32_t rd() {
  uint32_t v;
  if (fread(&v, 4, 1, stdin) != 1) {
    fprintf(stderr, "driver: short input\n");
    exit(2);
  }
  return v;
}

void rdbytes(void* p, uint32_t n) {
  const uint32_t padded = (n + 3) / 4 * 4;
  std::string tmp(padded, '\0');
  if (padded && fread(&tmp[0], 1, padded, stdin) != padded) {
    fprintf(stderr, "driver: short data\n");
    exit(2);
  }
  memcpy(p, tmp.data(), n);
}

struct Kernel {
  uint32_t threads;
  std::function<void(std::vector<Arg>&)> call;
};

template <class T>
T* P(std::vector<Arg>& a, int i) {
  return (T*)a[i].ptr;
}
uint32_t U(std::vector<Arg>& a, int i) { return a[i].value; }
float F(std::vector<Arg>& a, int i) {
  float f;
  memcpy(&f, &a[i].value, 4);
  return f;
}

#define WEIGHT_KERNELS(SUF, W)                                                                              \
  {"embed_" #SUF,                                                                                           \
   {FW_EMBED_THREADS,                                                                                       \
    [](std::vector<Arg>& a) { embed_##SUF(P<float>(a, 0), P<W>(a, 1), P<uint32_t>(a, 2), U(a, 3), U(a, 4), U(a, 5)); }}}, \
      {"rmsnorm_" #SUF,                                                                                     \
       {FW_NORM_THREADS,                                                                                    \
        [](std::vector<Arg>& a) { rmsnorm_##SUF(P<float>(a, 0), P<float>(a, 1), P<W>(a, 2), U(a, 3), U(a, 4), F(a, 5)); }}}, \
      {"matmul_" #SUF, {FW_MM_THREADS, [](std::vector<Arg>& a) {                                            \
                          matmul_##SUF(P<float>(a, 0), P<float>(a, 1), P<W>(a, 2), P<float>(a, 3), U(a, 4), U(a, 5), \
                                       U(a, 6), U(a, 7));                                                   \
                        }}}

const std::map<std::string, Kernel> kernels = {
    WEIGHT_KERNELS(f32, float),
    WEIGHT_KERNELS(f16, fw_f16),
    WEIGHT_KERNELS(bf16, fw_bf16),
    {"rope_f32",
     {FW_ROPE_THREADS,
      [](std::vector<Arg>& a) {
        rope_f32(P<float>(a, 0), P<uint32_t>(a, 1), P<float>(a, 2), U(a, 3), U(a, 4), U(a, 5), U(a, 6));
      }}},
    {"kv_store_f32",
     {FW_KV_THREADS,
      [](std::vector<Arg>& a) {
        kv_store_f32(P<float>(a, 0), P<float>(a, 1), P<float>(a, 2), P<uint32_t>(a, 3), U(a, 4), U(a, 5),
                     U(a, 6), U(a, 7), U(a, 8), U(a, 9));
      }}},
    {"attention_f32",
     {FW_ATT_THREADS,
      [](std::vector<Arg>& a) {
        attention_f32(P<float>(a, 0), P<float>(a, 1), P<float>(a, 2), P<float>(a, 3), P<uint32_t>(a, 4),
                      P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), U(a, 11),
                      U(a, 12), U(a, 13), F(a, 14));
      }}},
    {"silu_mul_f32",
     {FW_EW_THREADS, [](std::vector<Arg>& a) { silu_mul_f32(P<float>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3)); }}},
    {"add_f32", {FW_EW_THREADS, [](std::vector<Arg>& a) { add_f32(P<float>(a, 0), P<float>(a, 1), U(a, 2)); }}},
    {"copy_rows_f32",
     {FW_COPY_THREADS,
      [](std::vector<Arg>& a) { copy_rows_f32(P<float>(a, 0), P<float>(a, 1), P<uint32_t>(a, 2), U(a, 3), U(a, 4)); }}},
};

}  // namespace

int main() {
  std::vector<Buffer> bufs;
  for (;;) {
    const uint32_t len = rd();
    if (len == 0) break;
    std::string name(len, '\0');
    rdbytes(&name[0], len);
    const uint32_t grid = rd(), nargs = rd();
    std::vector<Arg> args(nargs);
    for (auto& a : args) {
      a.kind = rd();
      switch (a.kind) {
        case 0: {
          const uint32_t id = rd(), off = rd();
          if (id == bufs.size()) {
            Buffer b;
            b.shift = rd();
            b.nbytes = rd();
            b.base = (char*)aligned_alloc(64, (b.shift + b.nbytes + 63) / 64 * 64 + 64);
            rdbytes(b.base + b.shift, b.nbytes);
            bufs.push_back(b);
          } else if (id > bufs.size()) {
            fprintf(stderr, "driver: buffer id %u out of order\n", id);
            return 2;
          }
          a.ptr = bufs[id].base + bufs[id].shift + off;
          break;
        }
        case 1:
        case 2:
          a.value = rd();
          break;
        case 3:
          break;
        default:
          fprintf(stderr, "driver: unknown argument kind %u\n", a.kind);
          return 2;
      }
    }
    auto k = kernels.find(name);
    if (k == kernels.end()) {
      fprintf(stderr, "driver: unknown kernel %s\n", name.c_str());
      return 2;
    }
    const auto t0 = std::chrono::steady_clock::now();
    hostemu::launch(grid, k->second.threads, [&] { k->second.call(args); });
    if (getenv("HOSTEMU_PROFILE"))
      fprintf(stderr, "%s grid %u: %.1f ms\n", name.c_str(), grid,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (auto& b : bufs) {
    const uint32_t padded = (b.nbytes + 3) / 4 * 4;
    std::string tmp(padded, '\0');
    memcpy(&tmp[0], b.base + b.shift, b.nbytes);
    fwrite(tmp.data(), 1, padded, stdout);
    free(b.base);
  }
  fflush(stdout);
  return 0;
}

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
#include "forward.cu"
#include "driver.h"

namespace {

using namespace hostemu_driver;

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

int main() { return hostemu_driver::run(kernels); }

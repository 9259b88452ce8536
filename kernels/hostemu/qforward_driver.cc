// qforward_driver.cc: runs kernels/src/qforward.cu's kernels on the host
// under kernels/hostemu/hostemu.h, for package hostkern (BuildQuant). The
// build flags and the stdin/stdout protocol are forward_driver.cc's (read
// its header); only the kernel table differs. The kernel's block size is
// its QF_*_THREADS. Built with -DQF_METAL (BuildQuantMetal, the flags of
// forward_driver.cc's -DFW_METAL build), it runs kernels/src/qforward.metal
// through wrappers with the .cu kernels' signatures.
#ifdef QF_METAL
#include "fibers.h"
#include "qforward.metal"
#include "metal_fibers.h"

// The Metal kernels under the .cu signatures; threadgroup buffers are
// statics of the running block.
namespace qf_metal {
#define TG hostemu::tid, hostemu::bid
#define QF_METAL_KERNELS(SUF)                                                                                    \
  void embed_##SUF(float* out, const uint8_t* table, const uint32_t* tokens, uint32_t n, uint32_t hidden,        \
                   uint32_t vocab) {                                                                             \
    ::embed_##SUF(out, table, tokens, n, hidden, vocab, TG);                                                     \
  }                                                                                                              \
  void dequant_##SUF(uint16_t* dst, const uint8_t* w, uint32_t out, uint32_t in) {                              \
    ::dequant_##SUF(dst, w, out, in, TG);                                                                        \
  }                                                                                                              \
  void matvec_##SUF(float* y, const float* x, const uint8_t* w, const float* bias, uint32_t rows, uint32_t in,   \
                    uint32_t out, uint32_t accumulate) {                                                         \
    ::matvec_##SUF(y, x, w, bias, rows, in, out, accumulate, TG);                                                \
  }                                                                                                              \
  void matvec1_##SUF(float* y, const float* x, const uint8_t* w, const float* bias, uint32_t rows, uint32_t in,  \
                     uint32_t out, uint32_t accumulate) {                                                        \
    ::matvec1_##SUF(y, x, w, bias, rows, in, out, accumulate, TG);                                               \
  }                                                                                                              \
  void matmul_##SUF(float* y, const float* x, const uint8_t* w, const float* bias, uint32_t rows, uint32_t in,   \
                    uint32_t out, uint32_t accumulate) {                                                         \
    alignas(16) static float xs[QF_UNIT * QF_MM_PITCH], ws[QF_UNIT * QF_MM_PITCH];                               \
    ::matmul_##SUF(y, x, w, bias, rows, in, out, accumulate, xs, ws, TG);                                        \
  }
QF_METAL_KERNELS(q4_0)
QF_METAL_KERNELS(q4_1)
QF_METAL_KERNELS(q5_0)
QF_METAL_KERNELS(q5_1)
QF_METAL_KERNELS(q8_0)
QF_METAL_KERNELS(q4_k)
QF_METAL_KERNELS(q5_k)
QF_METAL_KERNELS(q6_k)
void scatter_cols_f32(float* dst, const float* src, uint32_t rows, uint32_t cols, uint32_t dst_stride,
                      uint32_t dst_off) {
  ::scatter_cols_f32(dst, src, rows, cols, dst_stride, dst_off, TG);
}
#undef TG
}  // namespace qf_metal
#define QFK(name) qf_metal::name
#else
#include "qforward.cu"
#define QFK(name) ::name
#endif
#include "driver.h"

namespace {

using namespace hostemu_driver;

#define QUANT_KERNELS(SUF)                                                                               \
  {"embed_" #SUF,                                                                                        \
   {QF_EMBED_THREADS,                                                                                    \
    [](std::vector<Arg>& a) {                                                                            \
      QFK(embed_##SUF)(P<float>(a, 0), P<uint8_t>(a, 1), P<uint32_t>(a, 2), U(a, 3), U(a, 4), U(a, 5));         \
    }}},                                                                                                 \
      {"dequant_" #SUF, {QF_DEQUANT_THREADS, [](std::vector<Arg>& a) {                                   \
                          QFK(dequant_##SUF)(P<uint16_t>(a, 0), P<uint8_t>(a, 1), U(a, 2), U(a, 3));          \
                        }}},                                                                             \
      {"matvec_" #SUF, {QF_MM_THREADS, [](std::vector<Arg>& a) {                                         \
                          QFK(matvec_##SUF)(P<float>(a, 0), P<float>(a, 1), P<uint8_t>(a, 2), P<float>(a, 3),  \
                                       U(a, 4), U(a, 5), U(a, 6), U(a, 7));                              \
                        }}},                                                                             \
      {"matvec1_" #SUF, {QF_MM_THREADS, [](std::vector<Arg>& a) {                                        \
                           QFK(matvec1_##SUF)(P<float>(a, 0), P<float>(a, 1), P<uint8_t>(a, 2), P<float>(a, 3), \
                                              U(a, 4), U(a, 5), U(a, 6), U(a, 7));                       \
                         }}},                                                                            \
      {"matmul_" #SUF, {QF_MM_THREADS, [](std::vector<Arg>& a) {                                         \
                          QFK(matmul_##SUF)(P<float>(a, 0), P<float>(a, 1), P<uint8_t>(a, 2), P<float>(a, 3),  \
                                       U(a, 4), U(a, 5), U(a, 6), U(a, 7));                              \
                        }}}

const std::map<std::string, Kernel> kernels = {
    QUANT_KERNELS(q4_0), QUANT_KERNELS(q4_1), QUANT_KERNELS(q5_0), QUANT_KERNELS(q5_1), QUANT_KERNELS(q8_0),
    QUANT_KERNELS(q4_k), QUANT_KERNELS(q5_k), QUANT_KERNELS(q6_k),
    {"scatter_cols_f32",
     {QF_SCATTER_THREADS,
      [](std::vector<Arg>& a) {
        QFK(scatter_cols_f32)(P<float>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3), U(a, 4), U(a, 5));
      }}},
};

}  // namespace

int main() { return hostemu_driver::run(kernels); }

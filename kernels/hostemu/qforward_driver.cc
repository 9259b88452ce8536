// qforward_driver.cc: runs kernels/src/qforward.cu's kernels on the host
// under kernels/hostemu/hostemu.h, for package hostkern (BuildQuant). The
// build flags and the stdin/stdout protocol are forward_driver.cc's (read
// its header); only the kernel table differs. The kernel's block size is
// its QF_*_THREADS.
#include "qforward.cu"
#include "driver.h"

namespace {

using namespace hostemu_driver;

#define QUANT_KERNELS(SUF)                                                                               \
  {"embed_" #SUF,                                                                                        \
   {QF_EMBED_THREADS,                                                                                    \
    [](std::vector<Arg>& a) {                                                                            \
      embed_##SUF(P<float>(a, 0), P<uint8_t>(a, 1), P<uint32_t>(a, 2), U(a, 3), U(a, 4), U(a, 5));         \
    }}},                                                                                                 \
      {"matmul_" #SUF, {QF_MM_THREADS, [](std::vector<Arg>& a) {                                         \
                          matmul_##SUF(P<float>(a, 0), P<float>(a, 1), P<uint8_t>(a, 2), P<float>(a, 3),  \
                                       U(a, 4), U(a, 5), U(a, 6), U(a, 7));                              \
                        }}}

const std::map<std::string, Kernel> kernels = {
    QUANT_KERNELS(q4_0), QUANT_KERNELS(q4_1), QUANT_KERNELS(q8_0),
    QUANT_KERNELS(q4_k), QUANT_KERNELS(q5_k), QUANT_KERNELS(q6_k),
    {"scatter_cols_f32",
     {QF_SCATTER_THREADS,
      [](std::vector<Arg>& a) {
        scatter_cols_f32(P<float>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3), U(a, 4), U(a, 5));
      }}},
};

}  // namespace

int main() { return hostemu_driver::run(kernels); }

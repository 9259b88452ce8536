// driver.h: the stdin/stdout launch protocol shared by the host-emulation
// drivers (forward_driver.cc, qforward_driver.cc; the protocol is described
// in forward_driver.cc's header). A driver includes its kernel source, then
// this file, defines its name -> Kernel table and calls hostemu_driver::run.
#ifndef HIPGO_HOSTEMU_DRIVER_H
#define HIPGO_HOSTEMU_DRIVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hostemu_driver {

struct Buffer {
  char* base;  // allocation
  uint32_t shift, nbytes;
};

struct Arg {
  uint32_t kind = 0, value = 0;
  void* ptr = nullptr;  // a buffer's data + offset, or null
};

inline uint32_t rd() {
  uint32_t v;
  if (fread(&v, 4, 1, stdin) != 1) {
    fprintf(stderr, "driver: short input\n");
    exit(2);
  }
  return v;
}

inline void rdbytes(void* p, uint32_t n) {
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
inline uint32_t U(std::vector<Arg>& a, int i) { return a[i].value; }
inline float F(std::vector<Arg>& a, int i) {
  float f;
  memcpy(&f, &a[i].value, 4);
  return f;
}

inline int run(const std::map<std::string, Kernel>& kernels) {
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

}  // namespace hostemu_driver

#endif  // HIPGO_HOSTEMU_DRIVER_H

// launch_overhead: the C baseline for hipgo's launch overhead. It issues the
// same launches as the Go benchmarks (an empty kernel, 1x1x1, on a
// non-blocking stream, from a PTX file loaded through the driver API) and
// prints nanoseconds per launch call, so the two are compared in one run on
// the same GPU.
//
//   nvcc -O2 -o launch_overhead launch_overhead.c -lcuda
//   ./launch_overhead kernels/build/testkernels/sm_90.ptx 10000
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    CUresult rc_ = (call);                                                   \
    if (rc_ != CUDA_SUCCESS) {                                               \
      const char* name_ = "?";                                               \
      cuGetErrorName(rc_, &name_);                                           \
      fprintf(stderr, "%s:%d %s -> %s (%d)\n", __FILE__, __LINE__, #call,   \
              name_, (int)rc_);                                              \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc(n + 1);
  if (fread(buf, 1, n, f) != (size_t)n) { perror("read"); exit(1); }
  buf[n] = 0;
  fclose(f);
  return buf;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PTX N [rounds]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[2]);
  int rounds = argc > 3 ? atoi(argv[3]) : 5;
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, read_file(argv[1])));
  CUfunction fn;
  CHECK(cuModuleGetFunction(&fn, mod, "empty"));
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  // Warm up: module, stream and launch paths.
  for (int i = 0; i < 1000; i++) CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK(cuStreamSynchronize(s));

  // Launches alone, and launches each followed by an event record (what the
  // runtime's Record adds), median over rounds.
  double best_launch = 1e30, best_event = 1e30;
  double launch[64], event[64];
  CUevent* evs = malloc(sizeof(CUevent) * n);
  for (int i = 0; i < n; i++) CHECK(cuEventCreate(&evs[i], CU_EVENT_DISABLE_TIMING));
  for (int r = 0; r < rounds && r < 64; r++) {
    double t0 = now_ns();
    for (int i = 0; i < n; i++) CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    double t1 = now_ns();
    CHECK(cuStreamSynchronize(s));
    launch[r] = (t1 - t0) / n;
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
      CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      CHECK(cuEventRecord(evs[i], s));
    }
    t1 = now_ns();
    CHECK(cuStreamSynchronize(s));
    event[r] = (t1 - t0) / n;
    if (launch[r] < best_launch) best_launch = launch[r];
    if (event[r] < best_event) best_event = event[r];
  }
  // Launches in batches of 256 with the queue drained between batches
  // (untimed): the host cost of a launch call, with no wait for a full queue.
  double batch[64];
  for (int r = 0; r < rounds && r < 64; r++) {
    double total = 0;
    for (int done = 0; done < n; done += 256) {
      CHECK(cuStreamSynchronize(s));
      double t0 = now_ns();
      for (int i = 0; i < 256; i++) CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      total += now_ns() - t0;
    }
    batch[r] = total / ((n + 255) / 256 * 256);
  }
  for (int i = 0; i < rounds; i++)
    for (int j = i + 1; j < rounds; j++)
      if (batch[j] < batch[i]) { double t = batch[i]; batch[i] = batch[j]; batch[j] = t; }
  // Median of the rounds.
  for (int i = 0; i < rounds; i++)
    for (int j = i + 1; j < rounds; j++) {
      if (launch[j] < launch[i]) { double t = launch[i]; launch[i] = launch[j]; launch[j] = t; }
      if (event[j] < event[i]) { double t = event[i]; event[i] = event[j]; event[j] = t; }
    }
  printf("{\"impl\":\"c\",\"n\":%d,\"rounds\":%d,\"launch_ns_median\":%.1f,\"launch_ns_best\":%.1f,"
         "\"launch_record_ns_median\":%.1f,\"launch_record_ns_best\":%.1f,\"launch_batched_ns_median\":%.1f}\n",
         n, rounds, launch[rounds / 2], best_launch, event[rounds / 2], best_event, batch[rounds / 2]);
  return 0;
}

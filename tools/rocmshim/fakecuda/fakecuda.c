/*
 * A fake libcuda.so.1 for testing rocmshim on a machine without a GPU (CI).
 * Memory is host memory; of the kernels only testkernels' are carried out,
 * on the host: fill_u32 and bounded_fill_u32 fill, spin_ns keeps its stream
 * busy for its time and then writes its flag, empty does nothing, and
 * oob_write_u32 makes the context die 50 ms later: from then on every call
 * returns CUDA_ERROR_ILLEGAL_ADDRESS, as the real driver does after such a
 * fault. Stream callbacks run on a thread of their own once the work before
 * them is done, with the fault's code once the context is dead. It models no
 * more than the shim's tests need.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void (*CUstreamCallback)(void* stream, CUresult status, void* user);

#define OK 0
#define INVALID_VALUE 1
#define OUT_OF_MEMORY 2
#define NOT_FOUND 500
#define NOT_READY 600
#define ILLEGAL_ADDRESS 700

#define TOTAL_MEMORY (1ull << 30)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double fault_at; /* 0: no fault */
static unsigned long long used;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dead(void) {
  pthread_mutex_lock(&mu);
  int d = fault_at > 0 && now() >= fault_at;
  pthread_mutex_unlock(&mu);
  return d;
}

#define LIVE() \
  if (dead()) return ILLEGAL_ADDRESS

static void sleep_until(double t) {
  double d = t - now();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
  nanosleep(&ts, NULL);
}

struct stream {
  double busy_until;
};
static struct stream null_stream;

static struct stream* S(void* s) { return s ? (struct stream*)s : &null_stream; }

/* spin_ns's flags, written once their time has come by whichever call
 * looks first (queries, synchronizes, copies), so that a spin seen complete
 * has written its flag. */
static struct {
  uint32_t* flag;
  double at;
} spins[64];
static int nspins;

static void settle(void) {
  pthread_mutex_lock(&mu);
  double t = now();
  for (int i = 0; i < nspins;) {
    if (spins[i].at <= t) {
      *(volatile uint32_t*)spins[i].flag = 1;
      spins[i] = spins[--nspins];
    } else {
      i++;
    }
  }
  pthread_mutex_unlock(&mu);
}

struct event {
  double at;
  int recorded;
};

struct func {
  char name[64];
  int max_threads;
};

struct module {
  int n;
  struct func f[32];
};

CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return OK; }
CUresult cuDeviceGet(int* d, int i) { if (i != 0) return 101; *d = 0; return OK; }
CUresult cuDeviceGetName(char* name, int len, int d) {
  (void)d;
  strncpy(name, "Fake GPU", (size_t)len);
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t* n, int d) { (void)d; *n = TOTAL_MEMORY; return OK; }
CUresult cuDeviceGetAttribute(int* v, int attr, int d) {
  (void)d;
  switch (attr) {
    case 1: *v = 1024; break;             /* max threads per block */
    case 16: *v = 4; break;               /* multiprocessors */
    case 33: *v = 0x41; break;            /* PCI bus */
    case 34: *v = 0; break;               /* PCI device */
    case 50: *v = 0; break;               /* PCI domain */
    case 75: *v = 9; break;               /* CC major */
    case 76: *v = 0; break;               /* CC minor */
    default: *v = 1; break;
  }
  return OK;
}
CUresult cuDeviceGetUuid(unsigned char u[16], int d) {
  (void)d;
  for (int i = 0; i < 16; i++) u[i] = (unsigned char)(0x10 + i);
  return OK;
}
static int ctx_token;
CUresult cuDevicePrimaryCtxRetain(void** c, int d) { (void)d; *c = &ctx_token; return OK; }
CUresult cuCtxSetCurrent(void* c) { (void)c; return OK; }
CUresult cuCtxSynchronize(void) { LIVE(); return OK; }

CUresult cuMemGetInfo_v2(size_t* f, size_t* t) {
  LIVE();
  *t = TOTAL_MEMORY;
  *f = TOTAL_MEMORY - used;
  return OK;
}
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  LIVE();
  if (n > TOTAL_MEMORY - used) return OUT_OF_MEMORY;
  void* m = calloc(1, n);
  if (!m) return OUT_OF_MEMORY;
  used += n;
  *p = (unsigned long long)(uintptr_t)m;
  return OK;
}
CUresult cuMemFree_v2(unsigned long long p) { LIVE(); free((void*)(uintptr_t)p); return OK; }
CUresult cuMemHostAlloc(void** p, size_t n, unsigned flags) { (void)flags; LIVE(); *p = calloc(1, n); return *p ? OK : OUT_OF_MEMORY; }
CUresult cuMemFreeHost(void* p) { LIVE(); free(p); return OK; }
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void* s, size_t n) { LIVE(); memcpy((void*)(uintptr_t)d, s, n); return OK; }
CUresult cuMemcpyDtoH_v2(void* d, unsigned long long s, size_t n) { LIVE(); settle(); memcpy(d, (void*)(uintptr_t)s, n); return OK; }
CUresult cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) { LIVE(); memmove((void*)(uintptr_t)d, (void*)(uintptr_t)s, n); return OK; }
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void* s, size_t n, void* st) { (void)st; return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoHAsync_v2(void* d, unsigned long long s, size_t n, void* st) { (void)st; return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemsetD8_v2(unsigned long long d, unsigned char v, size_t n) { LIVE(); memset((void*)(uintptr_t)d, v, n); return OK; }
CUresult cuMemsetD32_v2(unsigned long long d, unsigned v, size_t n) {
  LIVE();
  for (size_t i = 0; i < n; i++) ((uint32_t*)(uintptr_t)d)[i] = v;
  return OK;
}
CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void* s) { (void)s; return cuMemsetD8_v2(d, v, n); }
CUresult cuMemsetD32Async(unsigned long long d, unsigned v, size_t n, void* s) { (void)s; return cuMemsetD32_v2(d, v, n); }

/* The PTX's entries become the module's functions. */
CUresult cuModuleLoadData(void** m, const void* image) {
  LIVE();
  struct module* mod = calloc(1, sizeof *mod);
  for (const char* p = strstr(image, ".entry "); p && mod->n < 32; p = strstr(p + 1, ".entry ")) {
    const char* q = p + 7;
    size_t k = 0;
    while (q[k] && q[k] != '(' && q[k] != ' ' && q[k] != '\n' && k < 63) k++;
    struct func* f = &mod->f[mod->n++];
    memcpy(f->name, q, k);
    f->max_threads = strcmp(f->name, "bounded_fill_u32") == 0 ? 256 : 1024;
  }
  *m = mod;
  return OK;
}
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  LIVE();
  struct module* mod = m;
  for (int i = 0; i < mod->n; i++) {
    if (strcmp(mod->f[i].name, name) == 0) {
      *f = &mod->f[i];
      return OK;
    }
  }
  return NOT_FOUND;
}
CUresult cuModuleUnload(void* m) { LIVE(); free(m); return OK; }
CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
  LIVE();
  *v = attr == 0 ? ((struct func*)f)->max_threads : 0;
  return OK;
}

/* testkernels' parameter layouts (as their code objects' metadata has them). */
CUresult cuFuncGetParamInfo(void* fn, size_t i, size_t* off, size_t* size) {
  LIVE();
  static const struct {
    const char* name;
    int n;
    size_t off[3], size[3];
  } layouts[] = {
      {"fill_u32", 3, {0, 8, 12}, {8, 4, 4}},
      {"bounded_fill_u32", 3, {0, 8, 12}, {8, 4, 4}},
      {"oob_write_u32", 3, {0, 8, 16}, {8, 4, 8}},
      {"spin_ns", 2, {0, 8}, {8, 8}},
      {"empty", 0, {0}, {0}},
  };
  const char* name = ((struct func*)fn)->name;
  for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
    if (strcmp(layouts[k].name, name) != 0) continue;
    if (i >= (size_t)layouts[k].n) return INVALID_VALUE;
    *off = layouts[k].off[i];
    *size = layouts[k].size[i];
    return OK;
  }
  return INVALID_VALUE;
}

CUresult cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, void* st, void** params, void** extra) {
  (void)gx, (void)gy, (void)gz, (void)by, (void)bz, (void)extra;
  LIVE();
  struct func* f = fn;
  if (bx > (unsigned)f->max_threads || shmem > 228 * 1024) return INVALID_VALUE;
  struct stream* s = S(st);
  pthread_mutex_lock(&mu);
  if (strcmp(f->name, "fill_u32") == 0 || strcmp(f->name, "bounded_fill_u32") == 0) {
    uint32_t* p = *(uint32_t**)params[0];
    uint32_t v = *(uint32_t*)params[1], n = *(uint32_t*)params[2];
    for (uint32_t i = 0; i < n; i++) p[i] = v;
  } else if (strcmp(f->name, "spin_ns") == 0) {
    uint64_t ns = *(uint64_t*)params[0];
    double start = s->busy_until > now() ? s->busy_until : now();
    s->busy_until = start + (double)ns * 1e-9;
    if (nspins < 64) {
      spins[nspins].flag = *(uint32_t**)params[1];
      spins[nspins].at = s->busy_until;
      nspins++;
    }
  } else if (strcmp(f->name, "oob_write_u32") == 0) {
    /* The faulting kernel never completes: its stream stays busy. */
    if (fault_at == 0) fault_at = now() + 0.05;
    s->busy_until = 1e300;
  }
  pthread_mutex_unlock(&mu);
  return OK;
}

CUresult cuStreamCreate(void** s, unsigned flags) { (void)flags; LIVE(); *s = calloc(1, sizeof(struct stream)); return OK; }
CUresult cuStreamDestroy_v2(void* s) { LIVE(); free(s); return OK; }
CUresult cuStreamQuery(void* st) {
  LIVE();
  settle();
  struct stream* s = S(st);
  pthread_mutex_lock(&mu);
  int busy = now() < s->busy_until;
  pthread_mutex_unlock(&mu);
  return busy ? NOT_READY : OK;
}
CUresult cuStreamSynchronize(void* st) {
  LIVE();
  struct stream* s = S(st);
  pthread_mutex_lock(&mu);
  double t = s->busy_until;
  pthread_mutex_unlock(&mu);
  while (now() < t) {
    if (dead()) return ILLEGAL_ADDRESS;
    sleep_until(now() + 0.001);
  }
  return cuStreamQuery(st);
}

struct cb {
  void* stream;
  CUstreamCallback fn;
  void* user;
  double at;
};
static void* run_cb(void* p) {
  struct cb c = *(struct cb*)p;
  free(p);
  while (now() < c.at && !dead()) sleep_until(now() + 0.001);
  c.fn(c.stream, dead() ? ILLEGAL_ADDRESS : OK, c.user);
  return NULL;
}
CUresult cuStreamAddCallback(void* st, CUstreamCallback fn, void* user, unsigned flags) {
  (void)flags;
  LIVE();
  struct cb* c = malloc(sizeof *c);
  c->stream = st;
  c->fn = fn;
  c->user = user;
  pthread_mutex_lock(&mu);
  c->at = S(st)->busy_until;
  pthread_mutex_unlock(&mu);
  pthread_t t;
  pthread_create(&t, NULL, run_cb, c);
  pthread_detach(t);
  return OK;
}

CUresult cuEventCreate(void** e, unsigned flags) { (void)flags; LIVE(); *e = calloc(1, sizeof(struct event)); return OK; }
CUresult cuEventDestroy_v2(void* e) { LIVE(); free(e); return OK; }
CUresult cuEventRecord(void* ev, void* st) {
  LIVE();
  struct event* e = ev;
  pthread_mutex_lock(&mu);
  double b = S(st)->busy_until;
  e->at = b > now() ? b : now();
  e->recorded = 1;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuEventQuery(void* ev) {
  LIVE();
  settle();
  struct event* e = ev;
  pthread_mutex_lock(&mu);
  int busy = e->recorded && now() < e->at;
  pthread_mutex_unlock(&mu);
  return busy ? NOT_READY : OK;
}
CUresult cuEventSynchronize(void* ev) {
  struct event* e = ev;
  while (now() < e->at) {
    if (dead()) return ILLEGAL_ADDRESS;
    sleep_until(now() + 0.001);
  }
  return cuEventQuery(ev);
}
CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) {
  LIVE();
  *ms = (float)((((struct event*)b)->at - ((struct event*)a)->at) * 1e3);
  return OK;
}

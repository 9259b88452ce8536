/*
 * libamdhip64.so.6 of rocmshim: the HIP entry points hipgo's package hip
 * binds, over the CUDA driver, behaving as CLR does where CLR and CUDA
 * differ. The real HIP header declares every function defined here that it
 * knows, so the compiler checks each signature against ROCm's. What it
 * models, from which ROCm sources, is in README.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hip/hip_runtime_api.h>

#include "shim.h"

/* Not in the ROCm 5.2 header; the prototypes of the newer headers. */
hipError_t hipGetDevicePropertiesR0600(void* prop, int deviceId);
hipError_t hipKernelGetParamInfo(void* kernel, size_t paramIndex, size_t* paramOffset, size_t* paramSize);

#define HIP_VERSION_NOMINAL 60400000 /* 6.4.0 in HIP_VERSION's encoding */
#define EF_MACH_GFX942 0x4c          /* EF_AMDGPU_MACH_AMDGCN_GFX942 */
#define R0600_SIZE 1472
#define R0600_GCN_ARCH_NAME 1160

static const struct rocmshim_cuda* cu;
static __thread int cur_dev;
static __thread CUcontext cur_ctx;
static __thread hipError_t last_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static CUresult init_result;

static void init(void) {
  init_result = rocmshim_init();
  cu = rocmshim_cu();
  if (init_result == CUDA_SUCCESS) rocmshim_hold();
}

/* The CUDA driver's code for the same condition, in HIP's numbering (which
 * follows CUDA's runtime API, so most codes agree). */
static hipError_t map(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return hipSuccess;
    case CUDA_ERROR_INVALID_VALUE: return hipErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return hipErrorOutOfMemory;
    case CUDA_ERROR_NOT_INITIALIZED: return hipErrorNotInitialized;
    case CUDA_ERROR_NO_DEVICE: return hipErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return hipErrorInvalidDevice;
    case CUDA_ERROR_INVALID_IMAGE: return hipErrorInvalidImage;
    case CUDA_ERROR_INVALID_CONTEXT: return hipErrorInvalidContext;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return hipErrorNoBinaryForGpu;
    case CUDA_ERROR_INVALID_PTX: return hipErrorInvalidKernelFile;
    case CUDA_ERROR_INVALID_HANDLE: return hipErrorInvalidHandle;
    case CUDA_ERROR_NOT_FOUND: return hipErrorNotFound;
    case CUDA_ERROR_NOT_READY: return hipErrorNotReady;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return hipErrorLaunchOutOfResources;
    case CUDA_ERROR_LAUNCH_TIMEOUT: return hipErrorLaunchTimeOut;
    case CUDA_ERROR_NOT_SUPPORTED: return hipErrorNotSupported;
  }
  int s = rocmshim_sticky();
  return s ? (hipError_t)s : hipErrorUnknown;
}

/* What a call is, for the CLR 6.2 model: there a fault makes no call fail.
 * The queue is dead, so queries stay hipErrorNotReady and waits never
 * return; everything else still succeeds (ROCr itself is alive). */
enum { OTHER, QUERY, WAIT };
static __thread int kind;

static hipError_t after_fault_legacy(void) {
  if (kind == QUERY) return hipErrorNotReady;
  if (kind == WAIT) {
    for (;;) pause(); /* the completion signal never fires */
  }
  return hipSuccess;
}

/* enter is HIP_INIT_API (hipamd/src/hip_internal.hpp): once a GPU error is
 * recorded every entry point returns it before doing anything; a process
 * without a device gets hipErrorNoDevice. It returns 1 when the call must
 * return *e at once. */
static int enter(hipError_t* e) {
  pthread_once(&once, init);
  int s = rocmshim_sticky();
  if (s) {
    *e = (hipError_t)s;
    return 1;
  }
  if (rocmshim_legacy() && rocmshim_faulted()) {
    *e = after_fault_legacy();
    return 1;
  }
  if (init_result != CUDA_SUCCESS) {
    *e = map(init_result);
    return 1;
  }
  CUcontext want = rocmshim_context(cur_dev);
  if (cur_ctx != want) {
    CUresult r = cu->cuCtxSetCurrent(want);
    if (r != CUDA_SUCCESS) {
      *e = map(r);
      return 1;
    }
    cur_ctx = want;
  }
  *e = hipSuccess;
  return 0;
}

/* ret is HIP_RETURN: a GPU error recorded meanwhile overrides the result,
 * and the thread's last error keeps every real error (not success, not
 * hipErrorNotReady). */
static hipError_t ret(hipError_t e) {
  int s = rocmshim_sticky();
  if (s) e = (hipError_t)s;
  if (e != hipSuccess && e != hipErrorNotReady) last_error = e;
  return e;
}

#define ENTER_AS(k)                         \
  do {                                      \
    hipError_t e_;                          \
    kind = (k);                             \
    if (enter(&e_)) return ret(e_);         \
  } while (0)
#define ENTER() ENTER_AS(OTHER)

/* call forwards a CUDA result: a sticky one records the fault (and, in the
 * CLR 6.2 model, is not what the caller sees). */
static hipError_t call(CUresult r) {
  rocmshim_note(cur_dev, r);
  if (rocmshim_legacy() && rocmshim_faulted()) return after_fault_legacy();
  return ret(map(r));
}

static int valid_device(int d) { return d >= 0 && d < rocmshim_device_count(); }

/* ---- errors ---- */

const char* hipGetErrorName(hipError_t e) {
  switch (e) {
#define N(c) \
  case c:    \
    return #c;
    N(hipSuccess) N(hipErrorInvalidValue) N(hipErrorOutOfMemory) N(hipErrorNotInitialized)
    N(hipErrorInvalidConfiguration) N(hipErrorNoDevice) N(hipErrorInvalidDevice)
    N(hipErrorInvalidImage) N(hipErrorInvalidContext) N(hipErrorNoBinaryForGpu)
    N(hipErrorInvalidKernelFile) N(hipErrorInvalidHandle) N(hipErrorNotFound) N(hipErrorNotReady)
    N(hipErrorIllegalAddress) N(hipErrorLaunchOutOfResources) N(hipErrorLaunchTimeOut)
    N(hipErrorAssert) N(hipErrorLaunchFailure) N(hipErrorNotSupported) N(hipErrorUnknown)
#undef N
    default:
      return "hipErrorUnknown";
  }
}

/* hipGetLastError starts with HIP_INIT_API too, so after a fault it returns
 * the recorded error (and clears nothing that matters). */
hipError_t hipGetLastError(void) {
  hipError_t e;
  kind = OTHER;
  if (enter(&e)) return ret(e);
  e = last_error;
  last_error = hipSuccess;
  return e;
}

hipError_t hipPeekAtLastError(void) {
  hipError_t e;
  kind = OTHER;
  if (enter(&e)) return ret(e);
  return last_error;
}

/* ---- init and devices ---- */

hipError_t hipInit(unsigned int flags) {
  ENTER();
  return ret(flags != 0 ? hipErrorInvalidValue : hipSuccess);
}

hipError_t hipDriverGetVersion(int* v) {
  ENTER();
  if (!v) return ret(hipErrorInvalidValue);
  *v = HIP_VERSION_NOMINAL;
  return ret(hipSuccess);
}

hipError_t hipRuntimeGetVersion(int* v) {
  ENTER();
  if (!v) return ret(hipErrorInvalidValue);
  *v = HIP_VERSION_NOMINAL;
  return ret(hipSuccess);
}

hipError_t hipGetDeviceCount(int* n) {
  ENTER();
  if (!n) return ret(hipErrorInvalidValue);
  *n = rocmshim_device_count();
  return ret(hipSuccess);
}

hipError_t hipGetDevice(int* id) {
  ENTER();
  if (!id) return ret(hipErrorInvalidValue);
  *id = cur_dev;
  return ret(hipSuccess);
}

hipError_t hipSetDevice(int id) {
  ENTER();
  if (!valid_device(id)) return ret(hipErrorInvalidDevice);
  cur_dev = id;
  hipError_t e;
  enter(&e);
  return ret(e);
}

static hipError_t cu_attr(int* v, int attr, int dev) {
  return call(cu->cuDeviceGetAttribute(v, attr, rocmshim_device(dev)));
}

hipError_t hipDeviceGetAttribute(int* pi, hipDeviceAttribute_t attr, int dev) {
  ENTER();
  if (!pi) return ret(hipErrorInvalidValue);
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  uint32_t dom, bus, pdev;
  switch (attr) {
    case hipDeviceAttributeClockRate: return cu_attr(pi, CU_ATTR_CLOCK_RATE, dev);
    case hipDeviceAttributeIntegrated: return cu_attr(pi, CU_ATTR_INTEGRATED, dev);
    case hipDeviceAttributeL2CacheSize: return cu_attr(pi, CU_ATTR_L2_CACHE_SIZE, dev);
    case hipDeviceAttributeMaxBlockDimX: return cu_attr(pi, CU_ATTR_MAX_BLOCK_DIM_X, dev);
    case hipDeviceAttributeMaxBlockDimY: return cu_attr(pi, CU_ATTR_MAX_BLOCK_DIM_Y, dev);
    case hipDeviceAttributeMaxBlockDimZ: return cu_attr(pi, CU_ATTR_MAX_BLOCK_DIM_Z, dev);
    case hipDeviceAttributeMaxGridDimX: return cu_attr(pi, CU_ATTR_MAX_GRID_DIM_X, dev);
    case hipDeviceAttributeMaxGridDimY: return cu_attr(pi, CU_ATTR_MAX_GRID_DIM_Y, dev);
    case hipDeviceAttributeMaxGridDimZ: return cu_attr(pi, CU_ATTR_MAX_GRID_DIM_Z, dev);
    case hipDeviceAttributeMaxThreadsPerBlock: return cu_attr(pi, CU_ATTR_MAX_THREADS_PER_BLOCK, dev);
    case hipDeviceAttributeMultiprocessorCount: return cu_attr(pi, CU_ATTR_MULTIPROCESSOR_COUNT, dev);
    /* What a gfx942 reports, not the NVIDIA GPU underneath. */
    case hipDeviceAttributeComputeCapabilityMajor: *pi = 9; return ret(hipSuccess);
    case hipDeviceAttributeComputeCapabilityMinor: *pi = 4; return ret(hipSuccess);
    case hipDeviceAttributeWarpSize: *pi = ROCMSHIM_WAVEFRONT; return ret(hipSuccess);
    case hipDeviceAttributeMaxSharedMemoryPerBlock:
    case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor: *pi = ROCMSHIM_LDS_BYTES; return ret(hipSuccess);
    case hipDeviceAttributeAsicRevision: *pi = 1; return ret(hipSuccess);
    case hipDeviceAttributePciBusId:
    case hipDeviceAttributePciDeviceId:
    case hipDeviceAttributePciDomainID:
      if (rocmshim_pci(dev, &dom, &bus, &pdev) != 0) return ret(hipErrorInvalidValue);
      *pi = (int)(attr == hipDeviceAttributePciBusId ? bus : attr == hipDeviceAttributePciDeviceId ? pdev : dom);
      return ret(hipSuccess);
    default:
      return ret(hipErrorInvalidValue);
  }
}

hipError_t hipDeviceGetName(char* name, int len, hipDevice_t dev) {
  ENTER();
  if (!name || len <= 0) return ret(hipErrorInvalidValue);
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  char cuname[256];
  hipError_t e = call(cu->cuDeviceGetName(cuname, sizeof cuname, rocmshim_device(dev)));
  if (e != hipSuccess) return e;
  snprintf(name, (size_t)len, "%s (rocmshim " ROCMSHIM_ARCH ")", cuname);
  return ret(hipSuccess);
}

hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t dev) {
  ENTER();
  if (!bytes) return ret(hipErrorInvalidValue);
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  return call(cu->cuDeviceTotalMem(bytes, rocmshim_device(dev)));
}

/* hipDeviceGetPCIBusId in hipamd/src/hip_device_runtime.cpp: more than 12
 * bytes, and the function printed as 0 whatever it is. */
hipError_t hipDeviceGetPCIBusId(char* busid, int len, int dev) {
  ENTER();
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  if (!busid || len <= 12) return ret(hipErrorInvalidValue);
  uint32_t dom, bus, pdev;
  if (rocmshim_pci(dev, &dom, &bus, &pdev) != 0) return ret(hipErrorInvalidValue);
  snprintf(busid, (size_t)len, "%04x:%02x:%02x.0", dom, bus, pdev);
  return ret(hipSuccess);
}

/* hipDeviceGetUuid: the 16 characters after "GPU-" of the agent's UUID, as
 * roc::Device::create copies them (rocclr/device/rocm/rocdevice.cpp). */
hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t dev) {
  ENTER();
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  if (!uuid) return ret(hipErrorInvalidValue);
  if (rocmshim_uuid(dev, uuid->bytes) != 0) return ret(hipErrorInvalidValue);
  return ret(hipSuccess);
}

static hipError_t fill_common(char* name, size_t name_len, char* arch, int dev) {
  char cuname[200];
  hipError_t e = call(cu->cuDeviceGetName(cuname, sizeof cuname, rocmshim_device(dev)));
  if (e != hipSuccess) return e;
  snprintf(name, name_len, "%s (rocmshim " ROCMSHIM_ARCH ")", cuname);
  strcpy(arch, ROCMSHIM_TARGET_ID);
  return hipSuccess;
}

/* The R0600 layout (ROCm ≥ 6.0): name at 0, gcnArchName at byte 1160 of 1472. */
hipError_t hipGetDevicePropertiesR0600(void* prop, int dev) {
  ENTER();
  if (!prop) return ret(hipErrorInvalidValue);
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  memset(prop, 0, R0600_SIZE);
  return ret(fill_common((char*)prop, 256, (char*)prop + R0600_GCN_ARCH_NAME, dev));
}

/* The unversioned symbol fills the R0000 layout: the ROCm 5.2 header's
 * hipDeviceProp_t, which this file is compiled against. */
hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int dev) {
  ENTER();
  if (!prop) return ret(hipErrorInvalidValue);
  if (!valid_device(dev)) return ret(hipErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  hipError_t e = fill_common(prop->name, sizeof prop->name, prop->gcnArchName, dev);
  if (e != hipSuccess) return ret(e);
  prop->warpSize = ROCMSHIM_WAVEFRONT;
  prop->major = 9;
  prop->minor = 4;
  prop->gcnArch = 942;
  return ret(hipSuccess);
}

hipError_t hipDeviceSynchronize(void) {
  ENTER_AS(WAIT);
  return call(cu->cuCtxSynchronize());
}

hipError_t hipMemGetInfo(size_t* free, size_t* total) {
  ENTER();
  if (!free || !total) return ret(hipErrorInvalidValue);
  return call(cu->cuMemGetInfo(free, total));
}

/* ---- memory ---- */

hipError_t hipMalloc(void** p, size_t n) {
  ENTER();
  if (!p) return ret(hipErrorInvalidValue);
  *p = NULL;
  if (n == 0) return ret(hipSuccess);
  CUdeviceptr d = 0;
  hipError_t e = call(cu->cuMemAlloc(&d, n));
  *p = (void*)(uintptr_t)d;
  return e;
}

hipError_t hipFree(void* p) {
  ENTER();
  if (!p) return ret(hipSuccess);
  return call(cu->cuMemFree((CUdeviceptr)(uintptr_t)p));
}

hipError_t hipHostMalloc(void** p, size_t n, unsigned int flags) {
  ENTER();
  if (!p) return ret(hipErrorInvalidValue);
  /* hipHostMallocPortable/Mapped/WriteCombined are CUDA's bits 1, 2, 4. */
  return call(cu->cuMemHostAlloc(p, n, flags & 7));
}

hipError_t hipHostFree(void* p) {
  ENTER();
  if (!p) return ret(hipSuccess);
  return call(cu->cuMemFreeHost(p));
}

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t n) {
  ENTER();
  return call(cu->cuMemcpyHtoD(DP(dst), src, n));
}

hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t n) {
  ENTER();
  return call(cu->cuMemcpyDtoH(dst, DP(src), n));
}

hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t n) {
  ENTER();
  return call(cu->cuMemcpyDtoD(DP(dst), DP(src), n));
}

hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t n, hipStream_t s) {
  ENTER();
  return call(cu->cuMemcpyHtoDAsync(DP(dst), src, n, (CUstream)s));
}

hipError_t hipMemcpyDtoHAsync(void* dst, hipDeviceptr_t src, size_t n, hipStream_t s) {
  ENTER();
  return call(cu->cuMemcpyDtoHAsync(dst, DP(src), n, (CUstream)s));
}

hipError_t hipMemset(void* dst, int value, size_t n) {
  ENTER();
  return call(cu->cuMemsetD8(DP(dst), (unsigned char)value, n));
}

hipError_t hipMemsetD32(hipDeviceptr_t dst, int value, size_t count) {
  ENTER();
  return call(cu->cuMemsetD32(DP(dst), (unsigned)value, count));
}

hipError_t hipMemsetAsync(void* dst, int value, size_t n, hipStream_t s) {
  ENTER();
  return call(cu->cuMemsetD8Async(DP(dst), (unsigned char)value, n, (CUstream)s));
}

hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t s) {
  ENTER();
  return call(cu->cuMemsetD32Async(DP(dst), (unsigned)value, count, (CUstream)s));
}

/* ---- streams and callbacks ---- */

hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned int flags) {
  ENTER();
  if (!s || (flags != hipStreamDefault && flags != hipStreamNonBlocking)) return ret(hipErrorInvalidValue);
  CUstream cs = NULL;
  hipError_t e = call(cu->cuStreamCreate(&cs, flags)); /* CU_STREAM_NON_BLOCKING is 1 too */
  *s = (hipStream_t)cs;
  return e;
}

hipError_t hipStreamDestroy(hipStream_t s) {
  ENTER();
  return call(cu->cuStreamDestroy((CUstream)s));
}

hipError_t hipStreamSynchronize(hipStream_t s) {
  ENTER_AS(WAIT);
  return call(cu->cuStreamSynchronize((CUstream)s));
}

hipError_t hipStreamQuery(hipStream_t s) {
  ENTER_AS(QUERY);
  return call(cu->cuStreamQuery((CUstream)s));
}

/* CLR's streamCallback_common (hipamd/src/hip_stream.cpp) serves both
 * hipStreamAddCallback and hipLaunchHostFunc: a marker whose completion
 * callback (ihipStreamCallback) ignores the command's status, and
 * StreamAddCallback::callback (hipamd/src/hip_event.hpp) hands the user
 * hipSuccess. ROCclr runs completion callbacks on abnormal termination too,
 * so they run after a fault. cuStreamAddCallback also runs after a fault
 * (with the error, which the trampoline drops) and holds the stream until the
 * callback returns, as CLR's second, blocking marker does. */
struct callback {
  hipStream_t stream;
  hipStreamCallback_t cb;
  hipHostFn_t fn;
  void* user;
};

static void trampoline(CUstream s, CUresult status, void* p) {
  (void)s;
  (void)status;
  struct callback c = *(struct callback*)p;
  free(p);
  if (c.cb) {
    c.cb(c.stream, hipSuccess, c.user);
  } else {
    c.fn(c.user);
  }
}

static hipError_t add_callback(hipStream_t s, hipStreamCallback_t cb, hipHostFn_t fn, void* user) {
  struct callback* c = malloc(sizeof *c);
  if (!c) return ret(hipErrorOutOfMemory);
  c->stream = s;
  c->cb = cb;
  c->fn = fn;
  c->user = user;
  hipError_t e = call(cu->cuStreamAddCallback((CUstream)s, trampoline, c, 0));
  if (e != hipSuccess) free(c);
  return e;
}

hipError_t hipStreamAddCallback(hipStream_t s, hipStreamCallback_t cb, void* user, unsigned int flags) {
  ENTER();
  if (!cb || flags != 0) return ret(hipErrorInvalidValue);
  return add_callback(s, cb, NULL, user);
}

hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void* user) {
  ENTER();
  if (!fn) return ret(hipErrorInvalidValue);
  return add_callback(s, NULL, fn, user);
}

/* ---- events ---- */

hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned flags) {
  ENTER();
  if (!e) return ret(hipErrorInvalidValue);
  CUevent ce = NULL;
  /* hipEventBlockingSync 1, hipEventDisableTiming 2, hipEventInterprocess 4:
   * CUDA's bits too. */
  hipError_t r = call(cu->cuEventCreate(&ce, flags & 7));
  *e = (hipEvent_t)ce;
  return r;
}

hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  ENTER();
  return call(cu->cuEventRecord((CUevent)e, (CUstream)s));
}

/* hipEventQuery starts with HIP_INIT_API: after a fault it returns the
 * recorded error, not hipErrorNotReady, whatever the event's state. */
hipError_t hipEventQuery(hipEvent_t e) {
  ENTER_AS(QUERY);
  return call(cu->cuEventQuery((CUevent)e));
}

hipError_t hipEventSynchronize(hipEvent_t e) {
  ENTER_AS(WAIT);
  return call(cu->cuEventSynchronize((CUevent)e));
}

hipError_t hipEventDestroy(hipEvent_t e) {
  ENTER();
  return call(cu->cuEventDestroy((CUevent)e));
}

hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  ENTER();
  if (!ms) return ret(hipErrorInvalidValue);
  return call(cu->cuEventElapsedTime(ms, (CUevent)start, (CUevent)stop));
}

/* ---- modules ---- */

/* kernel_names collects the kernels of an AMDGPU code object: the symbols
 * named NAME.kd (kernel descriptors) of its symbol table, or of its dynamic
 * one when it was stripped. The names are written NUL-separated into out,
 * once each; the count is returned, or -1 when the image is not a 64-bit
 * AMDGPU ELF (-2: one for another GPU than gfx942). */
static int kernel_names(const unsigned char* img, char* out, size_t outlen) {
  const Elf64_Ehdr* eh = (const Elf64_Ehdr*)img;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_machine != EM_AMDGPU || eh->e_shentsize != sizeof(Elf64_Shdr))
    return -1;
  if ((eh->e_flags & 0xff) != EF_MACH_GFX942) return -2;
  const Elf64_Shdr* sh = (const Elf64_Shdr*)(img + eh->e_shoff);
  int table = -1;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type == SHT_SYMTAB || (table < 0 && sh[i].sh_type == SHT_DYNSYM)) table = i;
  }
  if (table < 0) return -1;
  const Elf64_Sym* syms = (const Elf64_Sym*)(img + sh[table].sh_offset);
  const char* strtab = (const char*)(img + sh[sh[table].sh_link].sh_offset);
  size_t used = 0;
  int n = 0;
  for (size_t k = 0; k < sh[table].sh_size / sizeof(Elf64_Sym); k++) {
    const char* name = strtab + syms[k].st_name;
    size_t len = strlen(name);
    if (len <= 3 || strcmp(name + len - 3, ".kd") != 0) continue;
    int seen = 0;
    for (const char* p = out; !seen && p < out + used; p += strlen(p) + 1)
      seen = strlen(p) == len - 3 && strncmp(p, name, len - 3) == 0;
    if (seen) continue;
    if (used + len - 2 > outlen) return -1;
    memcpy(out + used, name, len - 3);
    out[used + len - 3] = 0;
    used += len - 2;
    n++;
  }
  return n;
}

/* ptx_has reports whether a PTX text declares ".entry name(". */
static int ptx_has(const char* ptx, const char* name) {
  size_t len = strlen(name);
  for (const char* p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) {
    const char* q = p + 7;
    while (*q == ' ') q++;
    if (strncmp(q, name, len) == 0 && (q[len] == '(' || q[len] == ' ' || q[len] == '\n')) return 1;
  }
  return 0;
}

static int ptx_entries(const char* ptx) {
  int n = 0;
  for (const char* p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) n++;
  return n;
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = 0;
  fclose(f);
  return buf;
}

/* find_ptx returns (malloc'd) the PTX, under ROCMSHIM_PTX_DIR/<module>/sm_NN.ptx
 * for this GPU's sm, that declares exactly the code object's kernels. */
static char* find_ptx(const char* names, int n) {
  const char* dir = getenv("ROCMSHIM_PTX_DIR");
  /* Unset: the repository's kernels/build from the working directory or up
   * to three above it (go test runs a package's tests in its directory). */
  static const char* guesses[] = {"kernels/build", "../kernels/build", "../../kernels/build",
                                  "../../../kernels/build"};
  for (size_t i = 0; !dir && i < sizeof guesses / sizeof guesses[0]; i++) {
    DIR* d = opendir(guesses[i]);
    if (d) {
      closedir(d);
      dir = guesses[i];
    }
  }
  if (!dir) {
    fprintf(stderr, "rocmshim: set ROCMSHIM_PTX_DIR to the kernels' build directory (kernels/build)\n");
    return NULL;
  }
  int major = 0, minor = 0;
  cu->cuDeviceGetAttribute(&major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, rocmshim_device(cur_dev));
  cu->cuDeviceGetAttribute(&minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, rocmshim_device(cur_dev));
  DIR* d = opendir(dir);
  if (!d) {
    fprintf(stderr, "rocmshim: cannot open ROCMSHIM_PTX_DIR=%s\n", dir);
    return NULL;
  }
  char* found = NULL;
  struct dirent* ent;
  while (!found && (ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/sm_%d%d.ptx", dir, ent->d_name, major, minor);
    char* ptx = read_file(path);
    if (!ptx) continue;
    int all = ptx_entries(ptx) == n;
    const char* p = names;
    for (int i = 0; all && i < n; i++, p += strlen(p) + 1) all = ptx_has(ptx, p);
    if (all) {
      found = ptx;
    } else {
      free(ptx);
    }
  }
  closedir(d);
  if (!found) fprintf(stderr, "rocmshim: no sm_%d%d.ptx under %s declares the code object's %d kernels\n", major, minor, dir, n);
  return found;
}

/* hipModuleLoadData takes the gfx942 code object hipgo chose for this
 * device, as CLR would, and loads the PTX of the same kernels instead. */
hipError_t hipModuleLoadData(hipModule_t* m, const void* image) {
  ENTER();
  if (!m || !image) return ret(hipErrorInvalidValue);
  char names[8192];
  int n = kernel_names(image, names, sizeof names);
  if (n == -2) return ret(hipErrorNoBinaryForGpu);
  if (n <= 0) return ret(hipErrorInvalidImage);
  char* ptx = find_ptx(names, n);
  if (!ptx) return ret(hipErrorInvalidImage);
  CUmodule cm = NULL;
  hipError_t e = call(cu->cuModuleLoadData(&cm, ptx));
  free(ptx);
  *m = (hipModule_t)cm;
  return e;
}

hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t m, const char* name) {
  ENTER();
  if (!f || !name || !*name) return ret(hipErrorInvalidValue);
  CUfunction cf = NULL;
  hipError_t e = call(cu->cuModuleGetFunction(&cf, (CUmodule)m, name));
  *f = (hipFunction_t)cf;
  return e;
}

hipError_t hipModuleUnload(hipModule_t m) {
  ENTER();
  return call(cu->cuModuleUnload((CUmodule)m));
}

/* hipKernelGetParamInfo over cuFuncGetParamInfo (driver ≥ 12.4): past the
 * last parameter both say invalid value. */
hipError_t hipKernelGetParamInfo(void* kernel, size_t index, size_t* offset, size_t* size) {
  ENTER();
  if (!kernel || !offset || !size) return ret(hipErrorInvalidValue);
  if (!cu->cuFuncGetParamInfo) return ret(hipErrorNotSupported);
  return call(cu->cuFuncGetParamInfo((CUfunction)kernel, index, offset, size));
}

/* hipModuleLaunchKernel checks what ihipModuleLaunchKernel and
 * ihipLaunchKernel_validate (hipamd/src/hip_module.cpp) check, in their
 * order, before the CUDA launch: a null function; both kernelParams and extra;
 * a zero grid (invalid value) or block (invalid configuration); more dynamic
 * LDS than a gfx942 workgroup has; more than 1024 threads; arguments missing;
 * and a block over the kernel's launch bounds, which CLR reports as
 * hipErrorLaunchFailure. extra uses HIP's markers (BUFFER_POINTER 1,
 * BUFFER_SIZE 2, END 3), translated to CUDA's (END is 0 there). */
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int bx, unsigned int by, unsigned int bz,
                                 unsigned int shmem, hipStream_t s, void** params, void** extra) {
  ENTER();
  if (!f) return ret(hipErrorInvalidResourceHandle);
  if (params && extra) return ret(hipErrorInvalidValue);
  if (gx == 0 || gy == 0 || gz == 0) return ret(hipErrorInvalidValue);
  if (bx == 0 || by == 0 || bz == 0) return ret(hipErrorInvalidConfiguration);
  if (shmem > ROCMSHIM_LDS_BYTES) return ret(hipErrorInvalidValue);
  if ((unsigned long long)bx * by * bz > 1024) return ret(hipErrorInvalidValue);
  size_t off, sz;
  if (!params && !extra && cu->cuFuncGetParamInfo &&
      cu->cuFuncGetParamInfo((CUfunction)f, 0, &off, &sz) == CUDA_SUCCESS)
    return ret(hipErrorInvalidValue);
  int bound = 0;
  hipError_t e = call(cu->cuFuncGetAttribute(&bound, CU_FUNC_ATTR_MAX_THREADS_PER_BLOCK, (CUfunction)f));
  if (e != hipSuccess) return e;
  if ((unsigned long long)bx * by * bz > (unsigned long long)bound) return ret(hipErrorLaunchFailure);
  void* cuextra[5];
  void** x = NULL;
  if (extra) {
    if (extra[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER || extra[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE ||
        extra[4] != HIP_LAUNCH_PARAM_END)
      return ret(hipErrorInvalidValue);
    cuextra[0] = (void*)1; /* CU_LAUNCH_PARAM_BUFFER_POINTER */
    cuextra[1] = extra[1];
    cuextra[2] = (void*)2; /* CU_LAUNCH_PARAM_BUFFER_SIZE */
    cuextra[3] = extra[3];
    cuextra[4] = (void*)0; /* CU_LAUNCH_PARAM_END */
    x = cuextra;
  }
  return call(cu->cuLaunchKernel((CUfunction)f, gx, gy, gz, bx, by, bz, shmem, (CUstream)s, params, x));
}

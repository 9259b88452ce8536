/*
 * libhsa-runtime64.so.1 of rocmshim: the HSA entry points hipgo's package hsa
 * binds, over the CUDA driver, and the fault state both libraries share.
 * What it models, from which ROCm sources, is in README.md.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "shim.h"

#define MAX_DEVICES 16
#define MAX_HANDLERS 16
#define CPU_AGENT 0x5ea0000000001000ull
#define GPU_AGENT_BASE 0x5ea0000000002000ull

static struct rocmshim_cuda cu;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static int ndev;
static CUdevice devs[MAX_DEVICES];
static CUcontext ctxs[MAX_DEVICES];
static CUstream watch_streams[MAX_DEVICES];
static atomic_int hsa_refs;

static pthread_mutex_t handlers_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  hsa_amd_system_event_callback_t cb;
  void* data;
} handlers[MAX_HANDLERS];
static int nhandlers;

/* The recorded fault: the CUDA code that revealed it (0: none) and the HIP
 * code every HIP call returns from then on. */
static atomic_int fault_cuda;
static atomic_int fault_hip;
static atomic_int fault_dev;
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fault_cv = PTHREAD_COND_INITIALIZER;

static void* sym(void* lib, const char* v2, const char* name) {
  void* p = v2 ? dlsym(lib, v2) : NULL;
  return p ? p : dlsym(lib, name);
}

static void* fault_thread(void* arg);

static void load(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "rocmshim: cannot load libcuda.so.1: %s\n", dlerror());
    init_result = CUDA_ERROR_NO_DEVICE;
    return;
  }
#define BIND(field, v2, name)                                \
  do {                                                       \
    *(void**)(&cu.field) = sym(lib, v2, name);               \
    if (!cu.field) {                                         \
      fprintf(stderr, "rocmshim: libcuda lacks %s\n", name); \
      init_result = CUDA_ERROR_NOT_SUPPORTED;                \
      return;                                                \
    }                                                        \
  } while (0)
  BIND(cuInit, NULL, "cuInit");
  BIND(cuDriverGetVersion, NULL, "cuDriverGetVersion");
  BIND(cuDeviceGetCount, NULL, "cuDeviceGetCount");
  BIND(cuDeviceGet, NULL, "cuDeviceGet");
  BIND(cuDeviceGetName, NULL, "cuDeviceGetName");
  BIND(cuDeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
  BIND(cuDeviceGetAttribute, NULL, "cuDeviceGetAttribute");
  BIND(cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
  BIND(cuDevicePrimaryCtxRetain, NULL, "cuDevicePrimaryCtxRetain");
  BIND(cuCtxSetCurrent, NULL, "cuCtxSetCurrent");
  BIND(cuCtxSynchronize, NULL, "cuCtxSynchronize");
  BIND(cuMemGetInfo, "cuMemGetInfo_v2", "cuMemGetInfo");
  BIND(cuMemAlloc, "cuMemAlloc_v2", "cuMemAlloc");
  BIND(cuMemFree, "cuMemFree_v2", "cuMemFree");
  BIND(cuMemHostAlloc, NULL, "cuMemHostAlloc");
  BIND(cuMemFreeHost, NULL, "cuMemFreeHost");
  BIND(cuMemcpyHtoD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD");
  BIND(cuMemcpyDtoH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
  BIND(cuMemcpyDtoD, "cuMemcpyDtoD_v2", "cuMemcpyDtoD");
  BIND(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync");
  BIND(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync");
  BIND(cuMemsetD8, "cuMemsetD8_v2", "cuMemsetD8");
  BIND(cuMemsetD32, "cuMemsetD32_v2", "cuMemsetD32");
  BIND(cuMemsetD8Async, NULL, "cuMemsetD8Async");
  BIND(cuMemsetD32Async, NULL, "cuMemsetD32Async");
  BIND(cuModuleLoadData, NULL, "cuModuleLoadData");
  BIND(cuModuleGetFunction, NULL, "cuModuleGetFunction");
  BIND(cuModuleUnload, NULL, "cuModuleUnload");
  BIND(cuFuncGetAttribute, NULL, "cuFuncGetAttribute");
  BIND(cuLaunchKernel, NULL, "cuLaunchKernel");
  BIND(cuStreamCreate, NULL, "cuStreamCreate");
  BIND(cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  BIND(cuStreamSynchronize, NULL, "cuStreamSynchronize");
  BIND(cuStreamQuery, NULL, "cuStreamQuery");
  BIND(cuStreamAddCallback, NULL, "cuStreamAddCallback");
  BIND(cuEventCreate, NULL, "cuEventCreate");
  BIND(cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  BIND(cuEventRecord, NULL, "cuEventRecord");
  BIND(cuEventQuery, NULL, "cuEventQuery");
  BIND(cuEventSynchronize, NULL, "cuEventSynchronize");
  BIND(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
#undef BIND
  *(void**)(&cu.cuFuncGetParamInfo) = dlsym(lib, "cuFuncGetParamInfo");

  CUresult r = cu.cuInit(0);
  if (r == CUDA_SUCCESS) r = cu.cuDeviceGetCount(&ndev);
  if (r == CUDA_SUCCESS && ndev == 0) r = CUDA_ERROR_NO_DEVICE;
  if (ndev > MAX_DEVICES) ndev = MAX_DEVICES;
  for (int i = 0; r == CUDA_SUCCESS && i < ndev; i++) {
    r = cu.cuDeviceGet(&devs[i], i);
    if (r == CUDA_SUCCESS) r = cu.cuDevicePrimaryCtxRetain(&ctxs[i], devs[i]);
    if (r == CUDA_SUCCESS) r = cu.cuCtxSetCurrent(ctxs[i]);
    /* CU_STREAM_NON_BLOCKING: the fault thread's idle stream. */
    if (r == CUDA_SUCCESS) r = cu.cuStreamCreate(&watch_streams[i], 1);
  }
  if (r != CUDA_SUCCESS) {
    ndev = 0;
    init_result = r;
    return;
  }
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, fault_thread, NULL) != 0) {
    init_result = CUDA_ERROR_OUT_OF_MEMORY;
    return;
  }
  init_result = CUDA_SUCCESS;
}

CUresult rocmshim_init(void) {
  pthread_once(&init_once, load);
  return init_result;
}

const struct rocmshim_cuda* rocmshim_cu(void) { return &cu; }
int rocmshim_device_count(void) { return ndev; }
CUdevice rocmshim_device(int i) { return devs[i]; }
CUcontext rocmshim_context(int i) { return ctxs[i]; }

/* A sticky CUDA error maps to the HIP error current CLR records for the same
 * class of fault (Device::BackendErrorCallBackHandler, then
 * ConvertCLErrorIntoHIPError): memory faults are CL_INVALID_MEM_OBJECT, 700;
 * hardware exceptions and queue errors (illegal instruction, trap) 719. */
static int sticky_hip_code(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
      return 700;
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return 719;
  }
  return 0;
}

CUresult rocmshim_note(int ordinal, CUresult r) {
  int hip = sticky_hip_code(r);
  if (hip == 0) return r;
  int none = 0;
  if (atomic_compare_exchange_strong(&fault_cuda, &none, r)) {
    atomic_store(&fault_dev, ordinal);
    atomic_store(&fault_hip, hip);
    pthread_mutex_lock(&fault_mu);
    pthread_cond_broadcast(&fault_cv);
    pthread_mutex_unlock(&fault_mu);
  }
  return r;
}

int rocmshim_legacy(void) {
  const char* v = getenv("ROCMSHIM_CLR");
  return v && strcmp(v, "6.2") == 0;
}

int rocmshim_sticky(void) { return rocmshim_legacy() ? 0 : atomic_load(&fault_hip); }
int rocmshim_faulted(void) { return atomic_load(&fault_cuda) != 0; }

int rocmshim_pci(int i, uint32_t* domain, uint32_t* bus, uint32_t* device) {
  int d = 0, b = 0, v = 0;
  if (i < 0 || i >= ndev) return -1;
  if (cu.cuDeviceGetAttribute(&d, CU_ATTR_PCI_DOMAIN_ID, devs[i]) != CUDA_SUCCESS ||
      cu.cuDeviceGetAttribute(&b, CU_ATTR_PCI_BUS_ID, devs[i]) != CUDA_SUCCESS ||
      cu.cuDeviceGetAttribute(&v, CU_ATTR_PCI_DEVICE_ID, devs[i]) != CUDA_SUCCESS)
    return -1;
  *domain = (uint32_t)d;
  *bus = (uint32_t)b;
  *device = (uint32_t)v;
  return 0;
}

int rocmshim_uuid(int i, char out[16]) {
  unsigned char u[16];
  static const char hex[] = "0123456789abcdef";
  if (i < 0 || i >= ndev || cu.cuDeviceGetUuid(u, devs[i]) != CUDA_SUCCESS) return -1;
  for (int k = 0; k < 8; k++) {
    out[2 * k] = hex[u[k] >> 4];
    out[2 * k + 1] = hex[u[k] & 15];
  }
  return 0;
}

/* The fault thread plays ROCr's async-event thread: it watches for the fault
 * on its own (an idle stream's query returns the sticky error once the
 * context is dead, as KFD's interrupt reaches ROCr without anyone waiting),
 * and also wakes when a HIP call saw the fault first. It then hands a memory
 * fault to the registered system-event handlers and, when none returns
 * HSA_STATUS_SUCCESS, prints ROCr's message and aborts, as
 * Runtime::VMFaultHandler does (runtime/hsa-runtime/core/runtime/runtime.cpp). */
static void deliver(void) {
  int cuda = atomic_load(&fault_cuda);
  if (atomic_load(&fault_hip) != 700) {
    /* Illegal instructions and traps are queue errors in ROCr
     * (AqlQueue::ExceptionHandler calls the queue's error callback), not
     * system events: nothing to deliver. Current CLR reports 719 from every
     * call; CLR up to 6.2 aborts in its queue callback (callbackQueue in
     * rocclr/device/rocm/rocdevice.cpp and rocvirtual.cpp), whatever any
     * system-event handler would have said. */
    if (rocmshim_legacy()) {
      fprintf(stderr, "Callback: Queue %p aborting with error : HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: The agent attempted to execute an illegal shader instruction. code: 0x2a\n", (void*)0);
      abort();
    }
    return;
  }
  hsa_amd_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.event_type = HSA_AMD_GPU_MEMORY_FAULT_EVENT;
  ev.memory_fault.agent.handle = GPU_AGENT_BASE + 0x1000ull * (uint64_t)atomic_load(&fault_dev);
  /* CUDA does not report the faulting address: 0, marked imprecise as ROCr
   * marks an address that may not be exact. */
  ev.memory_fault.virtual_address = 0;
  ev.memory_fault.fault_reason_mask = HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT | HSA_AMD_MEMORY_FAULT_IMPRECISE;
  hsa_status_t claimed = HSA_STATUS_ERROR;
  pthread_mutex_lock(&handlers_mu);
  int n = nhandlers;
  pthread_mutex_unlock(&handlers_mu);
  for (int i = 0; i < n; i++) {
    if (handlers[i].cb(&ev, handlers[i].data) == HSA_STATUS_SUCCESS) claimed = HSA_STATUS_SUCCESS;
  }
  if (getenv("ROCMSHIM_TRACE"))
    fprintf(stderr, "rocmshim: fault (CUDA %d) delivered to %d handler(s): %s\n", cuda, n,
            claimed == HSA_STATUS_SUCCESS ? "claimed" : "not claimed");
  if (claimed != HSA_STATUS_SUCCESS) {
    fprintf(stderr,
            "Memory access fault by GPU node-1 (Agent handle: %p) on address %p(may not be exact "
            "address). Reason: Page not present or supervisor privilege.\n",
            (void*)(uintptr_t)ev.memory_fault.agent.handle, (void*)0);
    abort();
  }
}

static long poll_us(void) {
  const char* s = getenv("ROCMSHIM_POLL_US");
  long v = s ? atol(s) : 0;
  return v > 0 ? v : 1000;
}

static void* fault_thread(void* arg) {
  (void)arg;
  long us = poll_us();
  while (atomic_load(&fault_cuda) == 0) {
    for (int i = 0; i < ndev; i++) {
      if (cu.cuCtxSetCurrent(ctxs[i]) == CUDA_SUCCESS) rocmshim_note(i, cu.cuStreamQuery(watch_streams[i]));
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += us * 1000;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    pthread_mutex_lock(&fault_mu);
    if (atomic_load(&fault_cuda) == 0) pthread_cond_timedwait(&fault_cv, &fault_mu, &ts);
    pthread_mutex_unlock(&fault_mu);
  }
  deliver();
  return NULL;
}

/* ---- the HSA API ---- */

static int gpu_index(hsa_agent_t a) {
  if (a.handle < GPU_AGENT_BASE) return -1;
  uint64_t i = (a.handle - GPU_AGENT_BASE) / 0x1000;
  if ((a.handle - GPU_AGENT_BASE) % 0x1000 != 0 || i >= (uint64_t)ndev) return -1;
  return (int)i;
}

hsa_status_t hsa_init(void) {
  if (rocmshim_init() != CUDA_SUCCESS) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  atomic_fetch_add(&hsa_refs, 1);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_shut_down(void) {
  int n = atomic_load(&hsa_refs);
  while (n > 0 && !atomic_compare_exchange_weak(&hsa_refs, &n, n - 1)) {
  }
  return n > 0 ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_NOT_INITIALIZED;
}

void rocmshim_hold(void) { atomic_fetch_add(&hsa_refs, 1); }

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t agent, void* data), void* data) {
  if (atomic_load(&hsa_refs) == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  hsa_agent_t a = {CPU_AGENT};
  hsa_status_t st = callback(a, data);
  for (int i = 0; st == HSA_STATUS_SUCCESS && i < ndev; i++) {
    a.handle = GPU_AGENT_BASE + 0x1000ull * (uint64_t)i;
    st = callback(a, data);
  }
  return st;
}

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute, void* value) {
  if (atomic_load(&hsa_refs) == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int g = gpu_index(agent);
  if (g < 0 && agent.handle != CPU_AGENT) return HSA_STATUS_ERROR_INVALID_AGENT;
  int v = 0;
  switch ((int)attribute) {
    case HSA_AGENT_INFO_NAME:
      memset(value, 0, 64);
      strcpy((char*)value, g < 0 ? "rocmshim CPU" : ROCMSHIM_ARCH);
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_DEVICE:
      *(uint32_t*)value = g < 0 ? HSA_DEVICE_TYPE_CPU : HSA_DEVICE_TYPE_GPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
      *(uint32_t*)value = g < 0 ? 0 : ROCMSHIM_WAVEFRONT;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT:
      if (g < 0) {
        *(uint32_t*)value = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
      } else {
        if (cu.cuDeviceGetAttribute(&v, CU_ATTR_MULTIPROCESSOR_COUNT, devs[g]) != CUDA_SUCCESS)
          return HSA_STATUS_ERROR;
        *(uint32_t*)value = (uint32_t)v;
      }
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_BDFID:
    case HSA_AMD_AGENT_INFO_DOMAIN: {
      uint32_t dom, bus, dev;
      if (g < 0 || rocmshim_pci(g, &dom, &bus, &dev) != 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
      /* BDFID: bus<<8 | device<<3 | function, as CLR decodes it. */
      *(uint32_t*)value = (int)attribute == HSA_AMD_AGENT_INFO_DOMAIN ? dom : (bus << 8) | (dev << 3);
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AMD_AGENT_INFO_UUID: {
      char hex[16];
      if (g < 0 || rocmshim_uuid(g, hex) != 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
      memcpy(value, "GPU-", 4);
      memcpy((char*)value + 4, hex, 16);
      ((char*)value)[20] = 0;
      return HSA_STATUS_SUCCESS;
    }
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_status_string(hsa_status_t status, const char** status_string) {
  if (status_string == NULL) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch ((int)status) {
    case HSA_STATUS_SUCCESS:
      *status_string = "HSA_STATUS_SUCCESS: The function has been executed successfully.";
      return HSA_STATUS_SUCCESS;
    case HSA_STATUS_ERROR:
      *status_string = "HSA_STATUS_ERROR: A generic error has occurred.";
      return HSA_STATUS_SUCCESS;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
      *status_string = "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.";
      return HSA_STATUS_SUCCESS;
    case HSA_STATUS_ERROR_INVALID_AGENT:
      *status_string = "HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.";
      return HSA_STATUS_SUCCESS;
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
      *status_string = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events.";
      return HSA_STATUS_SUCCESS;
    case HSA_STATUS_ERROR_NOT_INITIALIZED:
      *status_string = "HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero.";
      return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t callback, void* data) {
  if (atomic_load(&hsa_refs) == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&handlers_mu);
  if (nhandlers == MAX_HANDLERS) {
    pthread_mutex_unlock(&handlers_mu);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  handlers[nhandlers].cb = callback;
  handlers[nhandlers].data = data;
  nhandlers++;
  pthread_mutex_unlock(&handlers_mu);
  return HSA_STATUS_SUCCESS;
}

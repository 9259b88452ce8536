/*
 * rocmshim: a ROCm-shaped stand-in over the CUDA driver, for testing hipgo's
 * ROCm adapter on an NVIDIA GPU. Test-only; never shipped. See README.md.
 *
 * Shared between the two libraries: libhsa-runtime64.so.1 (hsa.c) owns the
 * CUDA driver, the agents and the fault state, as ROCr owns the device and
 * its faults; libamdhip64.so.6 (hip.c) links it, as CLR links ROCr.
 */
#ifndef ROCMSHIM_SHIM_H
#define ROCMSHIM_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* The CUDA driver API, declared here (no CUDA headers): only what the shim
 * calls, with the driver's own types reduced to what they are. */
typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUevent;
typedef unsigned long long CUdeviceptr;
typedef void (*CUstreamCallback)(CUstream stream, CUresult status, void* userData);

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
};

/* cuDeviceGetAttribute ids (CUdevice_attribute). */
enum {
  CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  CU_ATTR_MAX_BLOCK_DIM_X = 2,
  CU_ATTR_MAX_BLOCK_DIM_Y = 3,
  CU_ATTR_MAX_BLOCK_DIM_Z = 4,
  CU_ATTR_MAX_GRID_DIM_X = 5,
  CU_ATTR_MAX_GRID_DIM_Y = 6,
  CU_ATTR_MAX_GRID_DIM_Z = 7,
  CU_ATTR_CLOCK_RATE = 13,
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_INTEGRATED = 18,
  CU_ATTR_PCI_BUS_ID = 33,
  CU_ATTR_PCI_DEVICE_ID = 34,
  CU_ATTR_L2_CACHE_SIZE = 38,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
  CU_ATTR_PCI_DOMAIN_ID = 50,
};

/* cuFuncGetAttribute: CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK. */
enum { CU_FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0 };

struct rocmshim_cuda {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* v);
  CUresult (*cuDeviceGetCount)(int* n);
  CUresult (*cuDeviceGet)(CUdevice* d, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice d);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice d);
  CUresult (*cuDeviceGetAttribute)(int* v, int attr, CUdevice d);
  CUresult (*cuDeviceGetUuid)(unsigned char uuid[16], CUdevice d);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* c, CUdevice d);
  CUresult (*cuCtxSetCurrent)(CUcontext c);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total);
  CUresult (*cuMemAlloc)(CUdeviceptr* p, size_t n);
  CUresult (*cuMemFree)(CUdeviceptr p);
  CUresult (*cuMemHostAlloc)(void** p, size_t n, unsigned flags);
  CUresult (*cuMemFreeHost)(void* p);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t n);
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t n);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t n);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t n, CUstream s);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t n, CUstream s);
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char v, size_t n);
  CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned v, size_t n);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned v, size_t n, CUstream s);
  CUresult (*cuModuleLoadData)(CUmodule* m, const void* image);
  CUresult (*cuModuleGetFunction)(CUfunction* f, CUmodule m, const char* name);
  CUresult (*cuModuleUnload)(CUmodule m);
  CUresult (*cuFuncGetAttribute)(int* v, int attr, CUfunction f);
  /* Driver ≥ 12.4 only; NULL when absent. */
  CUresult (*cuFuncGetParamInfo)(CUfunction f, size_t index, size_t* offset, size_t* size);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params,
                             void** extra);
  CUresult (*cuStreamCreate)(CUstream* s, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream s);
  CUresult (*cuStreamSynchronize)(CUstream s);
  CUresult (*cuStreamQuery)(CUstream s);
  CUresult (*cuStreamAddCallback)(CUstream s, CUstreamCallback cb, void* user, unsigned flags);
  CUresult (*cuEventCreate)(CUevent* e, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent e);
  CUresult (*cuEventRecord)(CUevent e, CUstream s);
  CUresult (*cuEventQuery)(CUevent e);
  CUresult (*cuEventSynchronize)(CUevent e);
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent stop);
};

/* Exported by libhsa-runtime64.so.1 for libamdhip64.so.6 only. */

/* rocmshim_init loads libcuda and the devices once (both libraries call it
 * from their first entry point, as HIP's first call initialises ROCr). It
 * returns the CUDA result of that one initialisation. */
CUresult rocmshim_init(void);
const struct rocmshim_cuda* rocmshim_cu(void);
int rocmshim_device_count(void);
CUdevice rocmshim_device(int ordinal);
CUcontext rocmshim_context(int ordinal);

/* rocmshim_note looks at a CUDA result of a call on device ordinal: a sticky
 * one (the context is dead) records the fault, which the fault thread then
 * delivers as ROCr would. It returns r. */
CUresult rocmshim_note(int ordinal, CUresult r);
/* rocmshim_hold takes the reference on the HSA runtime that HIP holds from
 * its first call on (CLR's roc::Device::init calls hsa_init). */
void rocmshim_hold(void);
/* rocmshim_sticky returns the HIP error every HIP call returns once a fault
 * was recorded (CLR's recorded GPU error), or 0. Always 0 in the CLR 6.2
 * model, where no call reports the fault. */
int rocmshim_sticky(void);
/* rocmshim_faulted reports whether a fault was recorded, in either model. */
int rocmshim_faulted(void);
/* rocmshim_legacy reports whether ROCMSHIM_CLR=6.2 asked for the model of
 * CLR up to ROCm 6.2 (no recorded error, queue errors abort). */
int rocmshim_legacy(void);

/* The GPU's identity, shared by HSA's agent attributes and HIP's device
 * queries so that both sides name one GPU alike. */
int rocmshim_pci(int ordinal, uint32_t* domain, uint32_t* bus, uint32_t* device);
/* rocmshim_uuid writes the 16 hex digits that follow "GPU-" in the agent's
 * UUID (no terminator). */
int rocmshim_uuid(int ordinal, char out[16]);

#define ROCMSHIM_ARCH "gfx942"
#define ROCMSHIM_TARGET_ID "gfx942:sramecc+:xnack-"
#define ROCMSHIM_LDS_BYTES (64 * 1024) /* gfx942: 64 KiB of LDS per workgroup */
#define ROCMSHIM_WAVEFRONT 64

#endif

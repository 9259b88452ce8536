// Test kernel for the GPU tests: built at test time with clang-19 for the
// device's arch (no vendor headers, see reference/toolchain.md).
#define __global__ __attribute__((global))

// add adds k to p[0..n), one 256-thread block per 256 elements.
extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(1, 256)))
void add(int* p, int n, int k) {
  int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
  if (i < n) p[i] += k;
}

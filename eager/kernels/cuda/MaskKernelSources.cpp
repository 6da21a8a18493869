// The CUDA C++ templates of nonzero (MaskKernelSources.h).
#include "eager/kernels/cuda/MaskKernelSources.h"

namespace kiln::native::cuda_kernels {

namespace {

// Note [nonzero on CUDA]
// ----------------------
// nonzero's result size depends on the data, so the host must learn it once:
// 1. count: a block per chunk of kNonzeroChunk elements counts its nonzeros
//    (counts[c]);
// 2. first rows: one block turns counts into an exclusive prefix sum in place
//    (the first result row of each chunk) and writes the total;
// 3. the host reads the total back (one 8-byte copy: the only wait for the
//    GPU), allocates the (total, ndim) result and launches
// 4. fill: a block per chunk walks its chunk in tiles of blockDim elements;
//    a block prefix sum of the tile's nonzero flags gives each element its row
//    (first row + rows of the earlier tiles + its rank in the tile), so rows
//    come out in element order, as the CPU's, whatever the grid.
// block_inclusive_scan is a Hillis-Steele scan in shared memory (barriers
// only, no warp votes), which is also what lets the host emulation run it
// (tests/python/cuda/test_cuda_row_kernels_on_host.py). masked_select,
// argwhere, nonzero(as_tuple=True) and a CUDA mask in index/index_put read
// this nonzero, so each waits for the GPU once, where the copy through the
// CPU waited twice and moved the whole mask.
const char* kBlockScan = R"CUDA(
#ifndef KILN_BLOCK_SCAN
#define KILN_BLOCK_SCAN
namespace kiln {
// The inclusive prefix sum of v over the block's threads in thread order; *total gets the block's sum.
// `shared` holds blockDim.x values. Begins and ends with a barrier, so a block may call it back to back.
__device__ inline long long block_inclusive_scan(long long v, long long* shared, long long* total) {
  const int t = threadIdx.x;
  __syncthreads();
  shared[t] = v;
  __syncthreads();
  for (int offset = 1; offset < (int)blockDim.x; offset <<= 1) {
    const long long add = t >= offset ? shared[t - offset] : 0ll;
    __syncthreads();
    shared[t] += add;
    __syncthreads();
  }
  const long long inclusive = shared[t];
  *total = shared[blockDim.x - 1];
  __syncthreads();
  return inclusive;
}
// nonzero's shape parameter: the sizes outermost first (MaskKernelSources.h's NonzeroShapeParam).
struct NonzeroShape {
  int ndim;
  long long sizes[kMaxDims];
};
}  // namespace kiln
#endif
)CUDA";

const char* kCount = R"CUDA(
extern "C" __global__ void $NAME(const $T* in, long long n, long long chunk, long long* counts) {
  __shared__ long long scan[1024];
  const long long chunks = (n + chunk - 1) / chunk;
  for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    const long long begin = c * chunk;
    const long long end = begin + chunk < n ? begin + chunk : n;
    long long k = 0;
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) k += kiln::convert<bool>(in[i]) ? 1 : 0;
    long long total;
    kiln::block_inclusive_scan(k, scan, &total);
    if (threadIdx.x == 0) counts[c] = total;
  }
}
)CUDA";

const char* kFirstRows = R"CUDA(
extern "C" __global__ void kiln_nonzero_first_rows(long long* counts, long long chunks, long long* total_out) {
  __shared__ long long scan[1024];
  if (blockIdx.x != 0) return;
  long long running = 0;
  for (long long base = 0; base < chunks; base += blockDim.x) {
    const long long c = base + threadIdx.x;
    const long long v = c < chunks ? counts[c] : 0ll;
    long long total;
    const long long inclusive = kiln::block_inclusive_scan(v, scan, &total);
    if (c < chunks) counts[c] = running + inclusive - v;
    running += total;
  }
  if (threadIdx.x == 0) *total_out = running;
}
)CUDA";

const char* kFill = R"CUDA(
extern "C" __global__ void $NAME(const $T* in, long long n, long long chunk, const long long* first_rows,
                                 long long* out, long long row_stride, long long column_stride,
                                 kiln::NonzeroShape shape) {
  __shared__ long long scan[1024];
  const long long chunks = (n + chunk - 1) / chunk;
  for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    const long long begin = c * chunk;
    const long long end = begin + chunk < n ? begin + chunk : n;
    long long row = first_rows[c];
    for (long long base = begin; base < end; base += blockDim.x) {
      const long long i = base + threadIdx.x;
      const long long hit = (i < end && kiln::convert<bool>(in[i])) ? 1 : 0;
      long long total;
      const long long inclusive = kiln::block_inclusive_scan(hit, scan, &total);
      if (hit) {
        long long* o = out + (row + inclusive - 1) * row_stride;
        long long rest = i;
        for (int d = shape.ndim - 1; d >= 0; --d) {
          const long long size = shape.sizes[d];
          o[d * column_stride] = rest % size;
          rest /= size;
        }
      }
      row += total;
    }
  }
}
)CUDA";

}  // namespace

KernelInstance nonzero_count_kernel(DType dtype) {
  const std::string name = std::string("kiln_nonzero_count_") + template_tag(dtype);
  return {name, std::string(kBlockScan) + fill_template(kCount, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

KernelInstance nonzero_first_rows_kernel() { return {"kiln_nonzero_first_rows", std::string(kBlockScan) + kFirstRows}; }

KernelInstance nonzero_fill_kernel(DType dtype) {
  const std::string name = std::string("kiln_nonzero_fill_") + template_tag(dtype);
  return {name, std::string(kBlockScan) + fill_template(kFill, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

void append_mask_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families) {
  std::vector<KernelInstance> nonzero{nonzero_first_rows_kernel()};
  for (DType d : cuda_kernel_dtypes()) {
    nonzero.push_back(nonzero_count_kernel(d));
    nonzero.push_back(nonzero_fill_kernel(d));
  }
  families.emplace_back("nonzero", std::move(nonzero));
}

}  // namespace kiln::native::cuda_kernels

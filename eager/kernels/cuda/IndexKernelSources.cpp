// The CUDA C++ templates of the indexing kernels (IndexKernelSources.h).
#include "eager/kernels/cuda/IndexKernelSources.h"

#include "eager/core/Error.h"

namespace kiln::native::cuda_kernels {

namespace {

// Atomic adds for the dtypes scatter_add handles; float16 and bfloat16 by a CAS
// loop on the aligned 32-bit word that holds them (the caching allocator hands
// out 512-byte blocks, so that word is always inside the allocation).
const char* kAtomicHelpers = R"CUDA(
#ifndef KILN_ATOMIC_HELPERS
#define KILN_ATOMIC_HELPERS
namespace kiln {
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ inline void atomic_add(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
template <typename H> __device__ void atomic_add_16(H* p, H v) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(p);
  unsigned* word = reinterpret_cast<unsigned*>(address & ~3ull);
  const unsigned shift = (address & 2ull) ? 16u : 0u;
  unsigned old = *word;
  unsigned assumed;
  do {
    assumed = old;
    H current;
    current.x = static_cast<unsigned short>((assumed >> shift) & 0xffffu);
    const H sum = convert<H>(to_float(current) + to_float(v));
    const unsigned next = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned>(sum.x) << shift);
    old = atomicCAS(word, assumed, next);
  } while (old != assumed);
}
__device__ inline void atomic_add(half* p, half v) { atomic_add_16(p, v); }
__device__ inline void atomic_add(bfloat16* p, bfloat16 v) { atomic_add_16(p, v); }
}  // namespace kiln
#endif
)CUDA";

// Operands: 0 the result, 1 the index, 2 the source at the index's position with the indexed
// dim's coordinate 0 (stride 0 there). A bad index (outside [0, dim_size)) is stored in bad[1],
// with bad[0] = 1, and never read.
const char* kGather = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, long long dim_stride, long long dim_size,
                                 long long* bad) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[3];
    ix.pointers(i, p);
    const long long k = (long long)*reinterpret_cast<const $I*>(p[1]);
    if (k < 0 || k >= dim_size) {
      bad[1] = k;
      atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      continue;
    }
    *reinterpret_cast<$W*>(p[0]) = *reinterpret_cast<const $W*>(p[2] + k * dim_stride);
  }
}
)CUDA";

// Operands: 0 the destination at the index's position with the indexed dim's coordinate 0,
// 1 the index, 2 the source. Duplicate indices: one of the writes wins (as torch's scatter).
const char* kScatter = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, long long dim_stride, long long dim_size,
                                 long long* bad) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[3];
    ix.pointers(i, p);
    const long long k = (long long)*reinterpret_cast<const $I*>(p[1]);
    if (k < 0 || k >= dim_size) {
      bad[1] = k;
      atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      continue;
    }
    *reinterpret_cast<$W*>(p[0] + k * dim_stride) = *reinterpret_cast<const $W*>(p[2]);
  }
}
)CUDA";

// As kScatter, adding alpha * source with an atomic add (float sums: order-dependent, as torch's).
const char* kScatterAdd = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, long long dim_stride, long long dim_size,
                                 double alpha, long long* bad) {
  using T = $T;
  using A = kiln::acc_t<T>;
  const A a = static_cast<A>(alpha);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[3];
    ix.pointers(i, p);
    const long long k = (long long)*reinterpret_cast<const $I*>(p[1]);
    if (k < 0 || k >= dim_size) {
      bad[1] = k;
      atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      continue;
    }
    const A v = kiln::convert<A>(*reinterpret_cast<const T*>(p[2]));
    kiln::atomic_add(reinterpret_cast<T*>(p[0] + k * dim_stride), kiln::convert<T>(alpha == 1.0 ? v : v * a));
  }
}
)CUDA";

const char* kMaskedFill = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n, $W value) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[2];
    ix.pointers(i, p);
    if (*reinterpret_cast<const bool*>(p[1])) *reinterpret_cast<$W*>(p[0]) = value;
  }
}
)CUDA";

const char* word_type(int element_size) {
  switch (element_size) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned int";
    case 8: return "unsigned long long";
    default: break;
  }
  KILN_FAIL(NotImplemented, "CUDA indexing kernels move 1-, 2-, 4- or 8-byte elements, not ", element_size);
}

void check_index_dtype(DType index) {
  KILN_CHECK(index == DType::Int64 || index == DType::Int32, "CUDA indexing kernels take int64 or int32 indices, not ",
             scalar_type_name(index));
}

KernelInstance by_size(const char* family, const char* text, int element_size, DType index) {
  check_index_dtype(index);
  const std::string name = std::string("kiln_") + family + "_s" + std::to_string(element_size) + "_" +
                           template_tag(index);
  return {name, fill_template(text, {{"NAME", name}, {"W", word_type(element_size)}, {"I", template_cuda_type(index)}})};
}

}  // namespace

KernelInstance gather_kernel(int element_size, DType index) { return by_size("gather", kGather, element_size, index); }

KernelInstance scatter_kernel(int element_size, DType index) {
  return by_size("scatter", kScatter, element_size, index);
}

bool has_atomic_add(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float64:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int32:
    case DType::Int64:
      return true;
    default:
      return false;
  }
}

KernelInstance scatter_add_kernel(DType dtype, DType index) {
  KILN_CHECK_NOT_IMPLEMENTED(has_atomic_add(dtype), "CUDA scatter_add/index_add do not support ",
                             scalar_type_name(dtype));
  check_index_dtype(index);
  const std::string name = std::string("kiln_scatter_add_") + template_tag(dtype) + "_" + template_tag(index);
  return {name, std::string(kAtomicHelpers) + fill_template(kScatterAdd, {{"NAME", name},
                                                                          {"T", template_cuda_type(dtype)},
                                                                          {"I", template_cuda_type(index)}})};
}

KernelInstance masked_fill_kernel(int element_size) {
  const std::string name = "kiln_masked_fill_s" + std::to_string(element_size);
  return {name, fill_template(kMaskedFill, {{"NAME", name}, {"W", word_type(element_size)}})};
}

void append_index_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families) {
  std::vector<KernelInstance> gather;
  std::vector<KernelInstance> scatter;
  std::vector<KernelInstance> masked;
  for (int size : {1, 2, 4, 8}) {
    for (DType index : {DType::Int64, DType::Int32}) {
      gather.push_back(gather_kernel(size, index));
      scatter.push_back(scatter_kernel(size, index));
    }
    masked.push_back(masked_fill_kernel(size));
  }
  for (DType d : cuda_kernel_dtypes()) {
    if (!has_atomic_add(d)) continue;
    for (DType index : {DType::Int64, DType::Int32}) scatter.push_back(scatter_add_kernel(d, index));
  }
  families.emplace_back("gather", std::move(gather));
  families.emplace_back("scatter", std::move(scatter));
  families.emplace_back("masked_fill", std::move(masked));
}

}  // namespace kiln::native::cuda_kernels

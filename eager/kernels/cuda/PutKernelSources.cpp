// The CUDA C++ templates of the reducing puts (PutKernelSources.h).
#include "eager/kernels/cuda/PutKernelSources.h"

#include "eager/core/Error.h"

namespace kiln::native::cuda_kernels {

namespace {

// Note [Atomic updates of any dtype]
// ----------------------------------
// CUDA has atomic adds for a few types only; scatter_reduce's prod, amax and
// amin and the 1- and 2-byte dtypes have none. atomic_update(p, f) stores
// f(*p) atomically by a compare-and-swap loop on the word holding *p: the
// 64-bit word for 8-byte types, else the aligned 32-bit word around it (inside
// the allocation: the caching allocator hands out 512-byte aligned blocks),
// replacing only *p's bytes. f computes in the dtype's compute type and
// rounds to the dtype once per update, as the CPU's loops do.
const char* kAtomicUpdate = R"CUDA(
#ifndef KILN_ATOMIC_UPDATE
#define KILN_ATOMIC_UPDATE
namespace kiln {
template <typename T> __device__ unsigned long long bits_of(T v) {
  const unsigned char* s = reinterpret_cast<const unsigned char*>(&v);
  unsigned long long u = 0;
  for (int i = 0; i < (int)sizeof(T); ++i) u |= static_cast<unsigned long long>(s[i]) << (8 * i);
  return u;
}
template <typename T> __device__ T of_bits(unsigned long long u) {
  T v;
  unsigned char* d = reinterpret_cast<unsigned char*>(&v);
  for (int i = 0; i < (int)sizeof(T); ++i) d[i] = static_cast<unsigned char>(u >> (8 * i));
  return v;
}
template <typename T, typename F> __device__ void atomic_update(T* p, F f) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long* word = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *word;
    unsigned long long assumed;
    do {
      assumed = old;
      old = atomicCAS(word, assumed, bits_of(f(of_bits<T>(assumed))));
    } while (old != assumed);
  } else {
    const unsigned long long address = reinterpret_cast<unsigned long long>(p);
    unsigned* word = reinterpret_cast<unsigned*>(address & ~3ull);
    const unsigned shift = static_cast<unsigned>(address & 3ull) * 8u;
    const unsigned mask = sizeof(T) == 4 ? 0xffffffffu : ((1u << (8u * (unsigned)sizeof(T))) - 1u) << shift;
    unsigned old = *word;
    unsigned assumed;
    do {
      assumed = old;
      const T next = f(of_bits<T>((assumed & mask) >> shift));
      const unsigned bits = (static_cast<unsigned>(bits_of(next)) << shift) & mask;
      old = atomicCAS(word, assumed, (assumed & ~mask) | bits);
    } while (old != assumed);
  }
}
}  // namespace kiln
#endif
)CUDA";

// Operands: 0 the destination at the index's position with the indexed dim's coordinate 0,
// 1 the index, 2 the source. A bad index is flagged as in the gather/scatter kernels.
const char* kScatterReduce = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, long long dim_stride, long long dim_size,
                                 long long* bad) {
  using T = $T;
  using A = kiln::acc_t<T>;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[3];
    ix.pointers(i, p);
    const long long k = (long long)*reinterpret_cast<const $I*>(p[1]);
    if (k < 0 || k >= dim_size) {
      bad[1] = k;
      atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      continue;
    }
    const A b = kiln::convert<A>(*reinterpret_cast<const T*>(p[2]));
    kiln::atomic_update(reinterpret_cast<T*>(p[0] + k * dim_stride), [b](T current) {
      const A a = kiln::convert<A>(current);
      return kiln::convert<T>($COMBINE);
    });
  }
}
)CUDA";

// Operands: 0 the destination restrided to the result shape (stride 0 over the index dims), 1 the
// byte offsets (checked already), 2 the values broadcast to the result shape. Duplicate offsets
// without accumulate: one of the writes wins, as torch's.
const char* kOffsetPut = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, int accumulate) {
  using T = $T;
  using A = kiln::acc_t<T>;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[3];
    ix.pointers(i, p);
    T* dst = reinterpret_cast<T*>(p[0] + *reinterpret_cast<const long long*>(p[1]));
    const T v = *reinterpret_cast<const T*>(p[2]);
    if (!accumulate) {
      *dst = v;
      continue;
    }
    const A b = kiln::convert<A>(v);
    kiln::atomic_update(dst, [b](T current) { return kiln::convert<T>(kiln::convert<A>(current) + b); });
  }
}
)CUDA";

const char* kIndexOffsets = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n, long long size, long long stride_bytes,
                                 int accumulate, long long* bad) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[2];
    ix.pointers(i, p);
    long long k = (long long)*reinterpret_cast<const $I*>(p[1]);
    if (k < -size || k >= size) {
      bad[1] = k;
      atomicExch(reinterpret_cast<unsigned long long*>(bad), 1ull);
      continue;
    }
    if (k < 0) k += size;
    long long* offset = reinterpret_cast<long long*>(p[0]);
    *offset = (accumulate ? *offset : 0ll) + k * stride_bytes;
  }
}
)CUDA";

const char* kMeanDivide = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n) {
  using T = $T;
  using A = kiln::acc_t<T>;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[2];
    ix.pointers(i, p);
    T* target = reinterpret_cast<T*>(p[0]);
    A c = kiln::convert<A>(*reinterpret_cast<const T*>(p[1]));
    if (c < A(1)) c = A(1);
    const A a = kiln::convert<A>(*target);
    *target = kiln::convert<T>($DIVIDE);
  }
}
)CUDA";

bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

void check_index(DType index) {
  KILN_CHECK(index == DType::Int64 || index == DType::Int32, "CUDA indexing kernels take int64 or int32 indices, not ",
             scalar_type_name(index));
}

std::string combine_of(const std::string& op) {
  if (op == "sum") return "a + b";
  if (op == "prod") return "a * b";
  if (op == "amax") return "kiln::max_nan(a, b)";
  if (op == "amin") return "kiln::min_nan(a, b)";
  KILN_FAIL(NotImplemented, "no CUDA scatter_reduce template for reduce='", op, "'");
}

}  // namespace

KernelInstance scatter_reduce_kernel(const std::string& op, DType dtype, DType index) {
  check_index(index);
  const std::string name = "kiln_scatter_reduce_" + op + "_" + template_tag(dtype) + "_" + template_tag(index);
  return {name, std::string(kAtomicUpdate) + fill_template(kScatterReduce, {{"NAME", name},
                                                                            {"T", template_cuda_type(dtype)},
                                                                            {"I", template_cuda_type(index)},
                                                                            {"COMBINE", combine_of(op)}})};
}

KernelInstance offset_put_kernel(DType dtype) {
  const std::string name = std::string("kiln_offset_put_") + template_tag(dtype);
  return {name, std::string(kAtomicUpdate) +
                    fill_template(kOffsetPut, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

KernelInstance index_offsets_kernel(DType index) {
  check_index(index);
  const std::string name = std::string("kiln_index_offsets_") + template_tag(index);
  return {name, fill_template(kIndexOffsets, {{"NAME", name}, {"I", template_cuda_type(index)}})};
}

KernelInstance mean_divide_kernel(DType dtype) {
  // Integers: floor division, as the CPU's div(rounding_mode="floor"); c >= 1.
  const std::string divide = is_floating(dtype) ? "a / c" : "A(a / c - ((a % c != A(0) && a < A(0)) ? 1 : 0))";
  const std::string name = std::string("kiln_mean_divide_") + template_tag(dtype);
  return {name, fill_template(kMeanDivide, {{"NAME", name}, {"T", template_cuda_type(dtype)}, {"DIVIDE", divide}})};
}

void append_put_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families) {
  std::vector<KernelInstance> put;
  for (DType index : {DType::Int64, DType::Int32}) put.push_back(index_offsets_kernel(index));
  for (DType d : cuda_kernel_dtypes()) {
    put.push_back(offset_put_kernel(d));
    if (d != DType::Bool) put.push_back(mean_divide_kernel(d));
    for (const char* op : {"sum", "prod", "amax", "amin"}) {
      for (DType index : {DType::Int64, DType::Int32}) put.push_back(scatter_reduce_kernel(op, d, index));
    }
  }
  families.emplace_back("put", std::move(put));
}

}  // namespace kiln::native::cuda_kernels

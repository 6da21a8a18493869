"""C++ text that lets CUDA C kernels kiln generates compile and run on the host with g++ (one thread,
one block): the CUDA qualifiers as nothing, the bit casts, the correctly rounded arithmetic intrinsics
as plain operators and the warp shuffles as identities. Used by the tests that run generated CUDA
kernels as host C++ (tests/python/compiler/test_cuda_host_emulation.py,
tests/python/cuda/test_cuda_pointwise_scalars_on_host.py); BLOCK_THREADS_SHIM runs every thread of a
block as a std::thread (__syncthreads a std::barrier, __shfl_xor_sync an exchange through per-thread
slots between two barriers; `launch(kernel, grid, block, args...)` runs a grid), for the block-cooperative kernels (tests/python/cuda/
test_cuda_row_kernels_on_host.py, test_cuda_vector_loads_on_host.py; build with -std=c++20 -pthread).
The eager grid-stride kernels' host test keeps a shim of its own, which models atomics."""

# The correctly rounded arithmetic intrinsics the printed kernels call (codegen/cuda's CudaExpr), as plain operators.
ROUNDED_INTRINSICS = r"""
#define __forceinline__ inline
#define __launch_bounds__(n)
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
"""

ONE_THREAD_SHIM = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
using std::exp; using std::log; using std::log1p; using std::expm1; using std::tanh; using std::erf; using std::sqrt;
#define KILN_KCG_HOST 1
#define __global__
#define __device__
#define __align__(n) alignas(n)
#define __shared__ static
#define asm(...) ((void)0)
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static dim3 threadIdx{0}, blockIdx{0}, blockDim{1}, gridDim{1};
template <typename T, typename F> inline T bits_as(F f) { T t; std::memcpy(&t, &f, sizeof(T)); return t; }
inline float __uint_as_float(unsigned u) { return bits_as<float>(u); }
inline unsigned __float_as_uint(float f) { return bits_as<unsigned>(f); }
inline float __int_as_float(int u) { return bits_as<float>(u); }
inline double __longlong_as_double(long long u) { return bits_as<double>(u); }
""" + ROUNDED_INTRINSICS + r"""template <typename T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
template <typename T> static inline T __shfl_sync(unsigned, T v, int) { return v; }
static inline void __syncthreads() {}
"""

BLOCK_THREADS_SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
using std::cos; using std::exp; using std::fmod; using std::log; using std::sin; using std::sqrt;
#define __global__
#define __device__
#define __shared__ static
#define __align__(n) alignas(n)
#define asm(...) ((void)0)
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx;
static dim3 blockIdx, blockDim, gridDim;
static std::barrier<>* block_barrier = nullptr;
static unsigned char shuffle_slots[1024][16];
template <typename T, typename F> inline T bits_as(F f) { T t; std::memcpy(&t, &f, sizeof(T)); return t; }
inline float __uint_as_float(unsigned u) { return bits_as<float>(u); }
inline unsigned __float_as_uint(float f) { return bits_as<unsigned>(f); }
inline float __int_as_float(int u) { return bits_as<float>(u); }
inline double __longlong_as_double(long long u) { return bits_as<double>(u); }
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
template <typename T> T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  std::memcpy(shuffle_slots[threadIdx.x], &v, sizeof(T));
  block_barrier->arrive_and_wait();
  T other;
  std::memcpy(&other, shuffle_slots[threadIdx.x ^ static_cast<unsigned>(lane_mask)], sizeof(T));
  block_barrier->arrive_and_wait();
  return other;
}
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}// launch(kernel, grid, block, args...): the grid's blocks one after another, each block's threads at once.
template <typename... Args>
void launch(void (*kernel)(Args...), unsigned grid, unsigned block, Args... args) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx.x = b;
    std::barrier<> barrier(block);
    block_barrier = &barrier;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t) {
      threads.emplace_back([=] {
        threadIdx.x = t;
        kernel(args...);
      });
    }
    for (auto& th : threads) th.join();
  }
}
"""

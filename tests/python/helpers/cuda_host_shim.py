"""C++ text that lets CUDA C kernels kiln generates compile and run on the host with g++ (one thread,
one block): the CUDA qualifiers as nothing, the bit casts, the correctly rounded arithmetic intrinsics
as plain operators and the warp shuffles as identities. Used by the tests that run generated CUDA
kernels as host C++ (tests/python/compiler/test_cuda_host_emulation.py,
tests/python/cuda/test_cuda_pointwise_scalars_on_host.py); the row-kernel and eager-kernel host tests
keep shims of their own, which model threads and atomics."""

ONE_THREAD_SHIM = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
using std::exp; using std::log; using std::log1p; using std::expm1; using std::tanh; using std::erf; using std::sqrt;
#define KILN_KCG_HOST 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
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
template <typename T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
template <typename T> static inline T __shfl_sync(unsigned, T v, int) { return v; }
static inline void __syncthreads() {}
"""

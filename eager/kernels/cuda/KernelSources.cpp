// The CUDA C++ templates (KernelSources.h): the prelude and each family's kernel.
#include "eager/kernels/cuda/KernelSources.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "eager/kernels/cuda/IndexKernelSources.h"
#include "eager/kernels/cuda/MaskKernelSources.h"
#include "eager/kernels/cuda/NnKernelSources.h"
#include "eager/kernels/cuda/OptimKernelSources.h"
#include "eager/kernels/cuda/PointwiseMath.h"
#include "eager/kernels/cuda/PutKernelSources.h"
#include "eager/kernels/cuda/RandomKernelSources.h"

namespace kiln::native::cuda_kernels {

namespace {

/// The CUDA spelling of a dtype and a short tag for kernel names.
const char* cuda_type(DType d) {
  switch (d) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "kiln::half";
    case DType::BFloat16: return "kiln::bfloat16";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short";
    case DType::Int32: return "int";
    case DType::Int64: return "long long";
    case DType::UInt8: return "unsigned char";
    case DType::Bool: return "bool";
    default: break;
  }
  KILN_FAIL(NotImplemented, "eager CUDA kernels do not support ", scalar_type_name(d));
}

const char* tag(DType d) {
  switch (d) {
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Int8: return "i8";
    case DType::Int16: return "i16";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::UInt8: return "u8";
    case DType::Bool: return "b8";
    default: break;
  }
  KILN_FAIL(NotImplemented, "eager CUDA kernels do not support ", scalar_type_name(d));
}

bool is_floating(DType d) { return dtype_in_set(d, DtypeSet::Floating); }

/// Replaces each "$KEY" of `text` with its value.
std::string fill(std::string text, std::vector<std::pair<std::string, std::string>> values) {
  // Longest keys first, so $IN never eats the start of $INIT.
  std::sort(values.begin(), values.end(), [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  for (const auto& [key, value] : values) {
    const std::string k = "$" + key;
    for (size_t at = text.find(k); at != std::string::npos; at = text.find(k, at + value.size())) {
      text.replace(at, k.size(), value);
    }
  }
  return text;
}

const char* kPrelude = R"CUDA(
// kiln eager CUDA kernels (eager/kernels/cuda/KernelSources.cpp)
// Self-contained: NVRTC 13 ships no cuda_fp16.h, and a GPU machine may have no toolkit
// headers, so the half types are 16-bit words converted here (PTX cvt for float16,
// bit arithmetic with round-to-nearest-even for bfloat16, as c10::BFloat16's).
namespace kiln {
constexpr int kMaxDims = 16;
struct __align__(2) half { unsigned short x; };
struct __align__(2) bfloat16 { unsigned short x; };
__device__ inline float to_float(half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
  return f;
}
__device__ inline half to_half(float f) {
  half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
  return h;
}
__device__ inline float to_float(bfloat16 b) { return __uint_as_float(static_cast<unsigned>(b.x) << 16); }
__device__ inline bfloat16 to_bfloat16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bfloat16{static_cast<unsigned short>((u >> 16) | 0x40u)};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bfloat16{static_cast<unsigned short>(u >> 16)};
}
// Strided operands: data pointers and byte strides per dim, innermost dim first.
template <int N>
struct Indexer {
  char* data[N];
  int ndim;
  long long sizes[kMaxDims];
  long long strides[N][kMaxDims];
  __device__ void pointers(long long linear, char** out) const {
    if (ndim == 1) {  // no division for a coalesced (contiguous or 1-d strided) iteration
      for (int k = 0; k < N; ++k) out[k] = data[k] + linear * strides[k][0];
      return;
    }
    for (int k = 0; k < N; ++k) out[k] = data[k];
    for (int d = 0; d < ndim; ++d) {
      const long long size = sizes[d];
      const long long c = linear % size;
      linear /= size;
      for (int k = 0; k < N; ++k) out[k] += c * strides[k][d];
    }
  }
};
// Note [Vector loads in the eager templates]
// A pointwise template moves V elements per access (V = 16 bytes over its widest operand's element,
// at most 8) when vector_ok(): every operand's innermost dim is contiguous (an input's may be
// broadcast: stride 0, one scalar read), each contiguous operand's base and outer strides are
// multiples of V elements, and (more than one dim) the innermost size is a multiple of V, so no
// vector crosses a row. A 1-d iteration takes n / V vectors and a scalar tail; anything else runs
// the scalar loop. A row template splits each row into a scalar head up to the first aligned
// column, a vector body and a scalar tail (row_span), when every operand it indexes by column has
// the same misalignment; else the row is scalar. The checks read only launch-uniform values, so a
// block never diverges on them, and results do not depend on the path taken except for the
// order in which a thread accumulates its share of a row (Note [Block sums are deterministic]).
template <typename T, int V> struct __align__(sizeof(T) * V) Pack { T v[V]; };
template <int BYTES> struct VecWidth { static constexpr int value = BYTES >= 16 ? 1 : (16 / BYTES > 8 ? 8 : 16 / BYTES); };
template <int W> struct Width { static constexpr int value = W; };
template <int N>
__device__ inline bool vector_ok(const Indexer<N>& ix, const int (&bytes)[N], int v) {
  if (ix.ndim < 1 || (ix.ndim > 1 && ix.sizes[0] % v != 0)) return false;
  for (int k = 0; k < N; ++k) {
    const long long s = ix.strides[k][0];
    if (s == 0 && k > 0) continue;
    if (s != bytes[k]) return false;
    const long long a = (long long)bytes[k] * v;
    if ((long long)(reinterpret_cast<unsigned long long>(ix.data[k]) % (unsigned long long)a) != 0) return false;
    for (int d = 1; d < ix.ndim; ++d) {
      if (ix.strides[k][d] % a != 0) return false;
    }
  }
  return true;
}
// W elements at p: one aligned access (W > 1), or W copies of one element when the operand is broadcast.
template <typename T, int W> __device__ inline void load_vec(const char* p, long long stride, T (&out)[W]) {
  if (W == 1 || stride == 0) {
    const T x = *reinterpret_cast<const T*>(p);
    for (int j = 0; j < W; ++j) out[j] = x;
    return;
  }
  const Pack<T, W> pk = *reinterpret_cast<const Pack<T, W>*>(p);
  for (int j = 0; j < W; ++j) out[j] = pk.v[j];
}
template <typename T, int W> __device__ inline void store_vec(char* p, const T (&in)[W]) {
  if (W == 1) {
    *reinterpret_cast<T*>(p) = in[0];
    return;
  }
  Pack<T, W> pk;
  for (int j = 0; j < W; ++j) pk.v[j] = in[j];
#ifdef __CUDA_ARCH__
  // One vector store, spelled out: NVVM splits the aggregate store into scalar ones inside a row
  // template's grid-stride loop over rows (loads stay vectors).
  const unsigned* w = reinterpret_cast<const unsigned*>(&pk);
  if (sizeof(pk) == 16) {
    asm volatile("st.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
    return;
  }
  if (sizeof(pk) == 8) {
    asm volatile("st.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]) : "memory");
    return;
  }
#endif
  *reinterpret_cast<Pack<T, W>*>(p) = pk;
}
template <typename T, int W> __device__ inline void load_row(const T* p, T (&out)[W]) {
  load_vec<T, W>(reinterpret_cast<const char*>(p), (long long)sizeof(T), out);
}
template <typename T, int W> __device__ inline void store_row(T* p, const T (&in)[W]) {
  store_vec<T, W>(reinterpret_cast<char*>(p), in);
}
// A row's columns: [0, head) and [body_end, cols) one at a time, [head, body_end) in vectors of V.
struct RowSpan { long long head, body_end; };
template <typename T, int V>
__device__ inline RowSpan row_span(long long cols, const void* p0, const void* p1 = nullptr, const void* p2 = nullptr,
                                   const void* p3 = nullptr) {
  const void* ps[4] = {p0, p1, p2, p3};
  const unsigned long long m = (reinterpret_cast<unsigned long long>(p0) / sizeof(T)) % V;
  for (int k = 1; k < 4; ++k) {
    if (ps[k] != nullptr && (reinterpret_cast<unsigned long long>(ps[k]) / sizeof(T)) % V != m) return RowSpan{cols, cols};
  }
  long long head = (long long)((V - m) % V);
  if (head > cols) head = cols;
  return RowSpan{head, head + (cols - head) / V * V};
}
// Calls f(c, Width<W>()) for the columns this thread owns: W = 1 for the head and tail, V for the body.
template <int V, typename F> __device__ inline void row_columns(RowSpan s, long long cols, F&& f) {
  for (long long c = threadIdx.x; c < s.head; c += blockDim.x) f(c, Width<1>());
  for (long long c = s.head + (long long)threadIdx.x * V; c < s.body_end; c += (long long)blockDim.x * V) f(c, Width<V>());
  for (long long c = s.body_end + threadIdx.x; c < cols; c += blockDim.x) f(c, Width<1>());
}
// The type a value computes in: float for the half types, itself otherwise.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<half> { using type = float; };
template <> struct Acc<bfloat16> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;
// Conversions as PyTorch's: bool is nonzero-ness, the half types go through float.
template <typename D, typename S> struct Convert { __device__ static D go(S v) { return static_cast<D>(v); } };
template <typename S> struct Convert<bool, S> { __device__ static bool go(S v) { return v != S(0); } };
template <> struct Convert<bool, bool> { __device__ static bool go(bool v) { return v; } };
template <> struct Convert<bool, half> { __device__ static bool go(half v) { return to_float(v) != 0.f; } };
template <> struct Convert<bool, bfloat16> { __device__ static bool go(bfloat16 v) { return to_float(v) != 0.f; } };
template <typename S> struct Convert<half, S> {
  __device__ static half go(S v) { return to_half(static_cast<float>(v)); }
};
template <typename S> struct Convert<bfloat16, S> {
  __device__ static bfloat16 go(S v) { return to_bfloat16(static_cast<float>(v)); }
};
template <> struct Convert<half, half> { __device__ static half go(half v) { return v; } };
template <> struct Convert<bfloat16, bfloat16> { __device__ static bfloat16 go(bfloat16 v) { return v; } };
template <> struct Convert<half, bfloat16> { __device__ static half go(bfloat16 v) { return to_half(to_float(v)); } };
template <> struct Convert<bfloat16, half> {
  __device__ static bfloat16 go(half v) { return to_bfloat16(to_float(v)); }
};
template <typename D> struct Convert<D, half> {
  __device__ static D go(half v) { return static_cast<D>(to_float(v)); }
};
template <typename D> struct Convert<D, bfloat16> {
  __device__ static D go(bfloat16 v) { return static_cast<D>(to_float(v)); }
};
template <typename D, typename S> __device__ D convert(S v) { return Convert<D, S>::go(v); }
// Helpers the pointwise expressions name (PointwiseMath.cpp).
template <typename A> __device__ A abs_value(A a) { return a < A(0) ? A(-a) : a; }
__device__ inline float abs_value(float a) { return fabsf(a); }
__device__ inline double abs_value(double a) { return fabs(a); }
template <typename A> __device__ A floor_value(A a) { return a; }
__device__ inline float floor_value(float a) { return floorf(a); }
__device__ inline double floor_value(double a) { return ::floor(a); }
template <typename A> __device__ A ceil_value(A a) { return a; }
__device__ inline float ceil_value(float a) { return ceilf(a); }
__device__ inline double ceil_value(double a) { return ::ceil(a); }
template <typename A> __device__ A trunc_value(A a) { return a; }
__device__ inline float trunc_value(float a) { return truncf(a); }
__device__ inline double trunc_value(double a) { return ::trunc(a); }
template <typename A> __device__ A round_value(A a) { return a; }
__device__ inline float round_value(float a) { return rintf(a); }
__device__ inline double round_value(double a) { return ::rint(a); }
template <typename A> __device__ A bit_not(A a) { return ~a; }
__device__ inline bool bit_not(bool a) { return !a; }
template <typename A> __device__ A max_nan(A a, A b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <typename A> __device__ A min_nan(A a, A b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <typename A> __device__ A python_remainder(A a, A b) {
  A r = fmod(a, b);
  if (r != A(0) && ((r < A(0)) != (b < A(0)))) r += b;
  return r;
}
template <typename A> __device__ A lowest();
template <typename A> __device__ A highest();
template <> __device__ inline float lowest<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ inline float highest<float>() { return __int_as_float(0x7f800000); }
template <> __device__ inline double lowest<double>() { return -__longlong_as_double(0x7ff0000000000000LL); }
template <> __device__ inline double highest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <> __device__ inline long long lowest<long long>() { return -9223372036854775807LL - 1; }
template <> __device__ inline long long highest<long long>() { return 9223372036854775807LL; }
template <> __device__ inline int lowest<int>() { return -2147483647 - 1; }
template <> __device__ inline int highest<int>() { return 2147483647; }
template <> __device__ inline short lowest<short>() { return -32768; }
template <> __device__ inline short highest<short>() { return 32767; }
template <> __device__ inline signed char lowest<signed char>() { return -128; }
template <> __device__ inline signed char highest<signed char>() { return 127; }
template <> __device__ inline unsigned char lowest<unsigned char>() { return 0; }
template <> __device__ inline unsigned char highest<unsigned char>() { return 255; }
template <> __device__ inline bool lowest<bool>() { return false; }
template <> __device__ inline bool highest<bool>() { return true; }
}  // namespace kiln
)CUDA";

// A grid-stride loop over `n` elements of strided operands: V elements per access where the
// operands allow, one at a time otherwise (Note [Vector loads in the eager templates]).
const char* kUnary = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n) {
  using IN = $IN;
  using OUT = $OUT;
  using A = kiln::acc_t<IN>;
  constexpr int V = kiln::VecWidth<(sizeof(IN) > sizeof(OUT) ? sizeof(IN) : sizeof(OUT))>::value;
  const int bytes[2] = {(int)sizeof(OUT), (int)sizeof(IN)};
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (kiln::vector_ok(ix, bytes, V)) {
    done = n / V * V;
    for (long long j = first; j < n / V; j += step) {
      char* p[2];
      ix.pointers(j * V, p);
      IN x[V];
      OUT y[V];
      kiln::load_vec<IN, V>(p[1], ix.strides[1][0], x);
      for (int e = 0; e < V; ++e) {
        const A a = kiln::convert<A>(x[e]);
        y[e] = kiln::convert<OUT>($EXPR);
      }
      kiln::store_vec<OUT, V>(p[0], y);
    }
  }
  for (long long i = done + first; i < n; i += step) {
    char* p[2];
    ix.pointers(i, p);
    const A a = kiln::convert<A>(*reinterpret_cast<const IN*>(p[1]));
    *reinterpret_cast<OUT*>(p[0]) = kiln::convert<OUT>($EXPR);
  }
}
)CUDA";

const char* kBinary = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, double scalar0, double scalar1) {
  using IN = $IN;
  using OUT = $OUT;
  using A = kiln::acc_t<IN>;
  const A $SCALAR0 = static_cast<A>(scalar0);
  const A $SCALAR1 = static_cast<A>(scalar1);
  (void)$SCALAR0;
  (void)$SCALAR1;
  constexpr int V = kiln::VecWidth<(sizeof(IN) > sizeof(OUT) ? sizeof(IN) : sizeof(OUT))>::value;
  const int bytes[3] = {(int)sizeof(OUT), (int)sizeof(IN), (int)sizeof(IN)};
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (kiln::vector_ok(ix, bytes, V)) {
    done = n / V * V;
    for (long long j = first; j < n / V; j += step) {
      char* p[3];
      ix.pointers(j * V, p);
      IN x[V];
      IN z[V];
      OUT y[V];
      kiln::load_vec<IN, V>(p[1], ix.strides[1][0], x);
      kiln::load_vec<IN, V>(p[2], ix.strides[2][0], z);
      for (int e = 0; e < V; ++e) {
        const A a = kiln::convert<A>(x[e]);
        const A b = kiln::convert<A>(z[e]);
        y[e] = kiln::convert<OUT>($EXPR);
      }
      kiln::store_vec<OUT, V>(p[0], y);
    }
  }
  for (long long i = done + first; i < n; i += step) {
    char* p[3];
    ix.pointers(i, p);
    const A a = kiln::convert<A>(*reinterpret_cast<const IN*>(p[1]));
    const A b = kiln::convert<A>(*reinterpret_cast<const IN*>(p[2]));
    *reinterpret_cast<OUT*>(p[0]) = kiln::convert<OUT>($EXPR);
  }
}
)CUDA";

const char* kWhere = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<4> ix, long long n) {
  using T = $IN;
  constexpr int V = kiln::VecWidth<sizeof(T)>::value;
  const int bytes[4] = {(int)sizeof(T), (int)sizeof(bool), (int)sizeof(T), (int)sizeof(T)};
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (kiln::vector_ok(ix, bytes, V)) {
    done = n / V * V;
    for (long long j = first; j < n / V; j += step) {
      char* p[4];
      ix.pointers(j * V, p);
      bool c[V];
      T x[V];
      T z[V];
      T y[V];
      kiln::load_vec<bool, V>(p[1], ix.strides[1][0], c);
      kiln::load_vec<T, V>(p[2], ix.strides[2][0], x);
      kiln::load_vec<T, V>(p[3], ix.strides[3][0], z);
      for (int e = 0; e < V; ++e) y[e] = c[e] ? x[e] : z[e];
      kiln::store_vec<T, V>(p[0], y);
    }
  }
  for (long long i = done + first; i < n; i += step) {
    char* p[4];
    ix.pointers(i, p);
    const bool c = *reinterpret_cast<const bool*>(p[1]);
    *reinterpret_cast<T*>(p[0]) = c ? *reinterpret_cast<const T*>(p[2]) : *reinterpret_cast<const T*>(p[3]);
  }
}
)CUDA";

const char* kCast = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n) {
  using IN = $IN;
  using OUT = $OUT;
  constexpr int V = kiln::VecWidth<(sizeof(IN) > sizeof(OUT) ? sizeof(IN) : sizeof(OUT))>::value;
  const int bytes[2] = {(int)sizeof(OUT), (int)sizeof(IN)};
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (kiln::vector_ok(ix, bytes, V)) {
    done = n / V * V;
    for (long long j = first; j < n / V; j += step) {
      char* p[2];
      ix.pointers(j * V, p);
      IN x[V];
      OUT y[V];
      kiln::load_vec<IN, V>(p[1], ix.strides[1][0], x);
      for (int e = 0; e < V; ++e) y[e] = kiln::convert<OUT>(x[e]);
      kiln::store_vec<OUT, V>(p[0], y);
    }
  }
  for (long long i = done + first; i < n; i += step) {
    char* p[2];
    ix.pointers(i, p);
    *reinterpret_cast<OUT*>(p[0]) = kiln::convert<OUT>(*reinterpret_cast<const IN*>(p[1]));
  }
}
)CUDA";

const char* kFill = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<1> ix, long long n, $IN value) {
  using T = $IN;
  constexpr int V = kiln::VecWidth<sizeof(T)>::value;
  const int bytes[1] = {(int)sizeof(T)};
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long done = 0;
  if (kiln::vector_ok(ix, bytes, V)) {
    done = n / V * V;
    T y[V];
    for (int e = 0; e < V; ++e) y[e] = value;
    for (long long j = first; j < n / V; j += step) {
      char* p[1];
      ix.pointers(j * V, p);
      kiln::store_vec<T, V>(p[0], y);
    }
  }
  for (long long i = done + first; i < n; i += step) {
    char* p[1];
    ix.pointers(i, p);
    *reinterpret_cast<T*>(p[0]) = value;
  }
}
)CUDA";

// One block (256 threads) per row of a contiguous [rows, cols] input; a tree in shared memory.
const char* kReduce = R"CUDA(
extern "C" __global__ void $NAME(const $IN* in, $OUT* out, long long rows, long long cols) {
  using IN = $IN;
  using OUT = $OUT;
  using A = kiln::acc_t<OUT>;
  constexpr int V = kiln::VecWidth<sizeof(IN)>::value;
  __shared__ A buf[256];
  const int t = threadIdx.x;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    A acc = $INIT;
    const IN* row = in + r * cols;
    kiln::row_columns<V>(kiln::row_span<IN, V>(cols, row), cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      IN x[W];
      kiln::load_row<IN, W>(row + c, x);
      for (int e = 0; e < W; ++e) {
        const A b = kiln::convert<A>(x[e]);
        const A a = acc;
        acc = $COMBINE;
      }
    });
    buf[t] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) {
        const A a = buf[t];
        const A b = buf[t + s];
        buf[t] = $COMBINE;
      }
      __syncthreads();
    }
    if (t == 0) {
      const A a = buf[0];
      out[r] = kiln::convert<OUT>($FINAL);
    }
    __syncthreads();
  }
}
)CUDA";

const char* kSoftmax = R"CUDA(
extern "C" __global__ void $NAME(const $IN* in, $IN* out, long long rows, long long cols) {
  using T = $IN;
  using A = kiln::acc_t<T>;
  constexpr int V = kiln::VecWidth<sizeof(T)>::value;
  __shared__ A buf[256];
  const int t = threadIdx.x;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    T* dst = out + r * cols;
    const kiln::RowSpan span = kiln::row_span<T, V>(cols, row, dst);
    A m = kiln::lowest<A>();
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T x[W];
      kiln::load_row<T, W>(row + c, x);
      for (int e = 0; e < W; ++e) m = kiln::max_nan(m, kiln::convert<A>(x[e]));
    });
    buf[t] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) buf[t] = kiln::max_nan(buf[t], buf[t + s]);
      __syncthreads();
    }
    m = buf[0];
    __syncthreads();
    A sum = A(0);
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T x[W];
      kiln::load_row<T, W>(row + c, x);
      for (int e = 0; e < W; ++e) sum += exp(kiln::convert<A>(x[e]) - m);
    });
    buf[t] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) buf[t] += buf[t + s];
      __syncthreads();
    }
    sum = buf[0];
    __syncthreads();
    kiln::row_columns<V>(span, cols, [&](long long c, auto width) {
      constexpr int W = decltype(width)::value;
      T x[W];
      T y[W];
      kiln::load_row<T, W>(row + c, x);
      for (int e = 0; e < W; ++e) {
        const A x_minus_max = kiln::convert<A>(x[e]) - m;
        y[e] = kiln::convert<T>($RESULT);
      }
      kiln::store_row<T, W>(dst + c, y);
    });
  }
}
)CUDA";

}  // namespace

const char* template_cuda_type(DType dtype) { return cuda_type(dtype); }
const char* template_tag(DType dtype) { return tag(dtype); }
std::string fill_template(std::string text, std::vector<std::pair<std::string, std::string>> values) {
  return fill(std::move(text), std::move(values));
}

const std::string& kernel_prelude() {
  static const std::string prelude = kPrelude;
  return prelude;
}

std::string module_source(const std::vector<KernelInstance>& kernels) {
  std::string s = kernel_prelude();
  for (const auto& k : kernels) s += k.body;
  return s;
}

const std::vector<DType>& cuda_kernel_dtypes() {
  static const std::vector<DType> dtypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                            DType::Int8,    DType::Int16,   DType::Int32,   DType::Int64,
                                            DType::UInt8,   DType::Bool};
  return dtypes;
}

bool is_cuda_kernel_dtype(DType dtype) {
  for (DType d : cuda_kernel_dtypes()) {
    if (d == dtype) return true;
  }
  return false;
}

KernelInstance unary_kernel(const std::string& op, DType in, DType out) {
  const PointwiseMath* m = find_pointwise_math(op);
  KILN_CHECK(m != nullptr && m->arity == 1, "no unary CUDA template for ", op);
  const std::string name = "kiln_unary_" + op + "_" + tag(in) + "_" + tag(out);
  return {name, fill(kUnary, {{"NAME", name}, {"IN", cuda_type(in)}, {"OUT", cuda_type(out)}, {"EXPR", m->expr}})};
}

KernelInstance binary_kernel(const std::string& op, DType in, DType out) {
  const PointwiseMath* m = find_pointwise_math(op);
  KILN_CHECK(m != nullptr && m->arity == 2, "no binary CUDA template for ", op);
  const std::string name = "kiln_binary_" + op + "_" + tag(in) + "_" + tag(out);
  // The two double parameters: the row's Scalar arguments, or alpha (and a name nothing reads).
  KILN_CHECK(m->scalar_arguments.size() <= kMaxPointwiseScalars, "too many Scalar arguments for ", op);
  std::vector<std::string> scalars = m->scalar_arguments;
  if (scalars.empty()) scalars.push_back("alpha");
  if (scalars.size() < 2) scalars.push_back("unused_scalar");
  return {name, fill(kBinary, {{"NAME", name}, {"IN", cuda_type(in)}, {"OUT", cuda_type(out)}, {"EXPR", m->expr},
                               {"SCALAR0", scalars[0]}, {"SCALAR1", scalars[1]}})};
}

KernelInstance where_kernel(DType dtype) {
  const std::string name = std::string("kiln_where_") + tag(dtype);
  return {name, fill(kWhere, {{"NAME", name}, {"IN", cuda_type(dtype)}})};
}

KernelInstance cast_kernel(DType src, DType dst) {
  const std::string name = std::string("kiln_cast_") + tag(src) + "_" + tag(dst);
  return {name, fill(kCast, {{"NAME", name}, {"IN", cuda_type(src)}, {"OUT", cuda_type(dst)}})};
}

KernelInstance fill_kernel(DType dtype) {
  const std::string name = std::string("kiln_fill_") + tag(dtype);
  return {name, fill(kFill, {{"NAME", name}, {"IN", cuda_type(dtype)}})};
}

KernelInstance reduce_kernel(const std::string& op, DType in, DType out) {
  std::string init;
  std::string combine;
  std::string final_expr = "a";
  if (op == "sum" || op == "mean") {
    init = "A(0)";
    combine = "a + b";
    if (op == "mean") final_expr = "a / A(cols)";
  } else if (op == "prod") {
    init = "A(1)";
    combine = "a * b";
  } else if (op == "max") {
    init = "kiln::lowest<A>()";
    combine = "kiln::max_nan(a, b)";
  } else if (op == "min") {
    init = "kiln::highest<A>()";
    combine = "kiln::min_nan(a, b)";
  } else {
    KILN_FAIL(Runtime, "no CUDA reduction template for ", op);
  }
  const std::string name = "kiln_reduce_" + op + "_" + tag(in) + "_" + tag(out);
  return {name, fill(kReduce, {{"NAME", name},
                               {"IN", cuda_type(in)},
                               {"OUT", cuda_type(out)},
                               {"INIT", init},
                               {"COMBINE", combine},
                               {"FINAL", final_expr}})};
}

KernelInstance softmax_kernel(bool log, DType dtype) {
  const std::string name = std::string(log ? "kiln_log_softmax_" : "kiln_softmax_") + tag(dtype);
  return {name, fill(kSoftmax, {{"NAME", name}, {"IN", cuda_type(dtype)}, {"RESULT", log ? "x_minus_max - log(sum)" : "exp(x_minus_max) / sum"}})};
}

std::vector<std::pair<std::string, std::vector<KernelInstance>>> all_kernel_instances() {
  std::vector<std::pair<std::string, std::vector<KernelInstance>>> families;
  std::vector<KernelInstance> unary;
  std::vector<KernelInstance> binary;
  for (const PointwiseMath& m : pointwise_math_table()) {
    for (DType in : cuda_kernel_dtypes()) {
      if (!dtype_in_set(in, m.dtypes)) continue;
      const DType out = m.kind == PointwiseKind::Comparison ? DType::Bool : in;
      (m.arity == 1 ? unary : binary).push_back(m.arity == 1 ? unary_kernel(m.name, in, out)
                                                             : binary_kernel(m.name, in, out));
    }
  }
  families.emplace_back("unary", std::move(unary));
  families.emplace_back("binary", std::move(binary));
  std::vector<KernelInstance> casts;
  for (DType src : cuda_kernel_dtypes()) {
    for (DType dst : cuda_kernel_dtypes()) casts.push_back(cast_kernel(src, dst));
  }
  families.emplace_back("cast", std::move(casts));
  std::vector<KernelInstance> fills;
  std::vector<KernelInstance> wheres;
  for (DType d : cuda_kernel_dtypes()) {
    fills.push_back(fill_kernel(d));
    wheres.push_back(where_kernel(d));
  }
  families.emplace_back("fill", std::move(fills));
  families.emplace_back("where", std::move(wheres));
  std::vector<KernelInstance> reduce;
  for (const char* op : {"sum", "prod", "max", "min", "mean"}) {
    for (DType in : cuda_kernel_dtypes()) {
      const std::string o = op;
      if (in == DType::Bool) continue;  // sum/prod of bool read it as int64 (the launcher casts first)
      if (o == "mean" && !is_floating(in)) continue;
      // sum and prod of an integer type accumulate in int64 (the launcher casts the input first)
      if ((o == "sum" || o == "prod") && !is_floating(in) && in != DType::Int64) continue;
      reduce.push_back(reduce_kernel(op, in, in));
    }
  }
  families.emplace_back("reduce", std::move(reduce));
  std::vector<KernelInstance> softmax;
  for (DType d : cuda_kernel_dtypes()) {
    if (!is_floating(d)) continue;
    softmax.push_back(softmax_kernel(false, d));
    softmax.push_back(softmax_kernel(true, d));
  }
  families.emplace_back("softmax", std::move(softmax));
  append_nn_kernel_instances(families);
  append_index_kernel_instances(families);
  append_put_kernel_instances(families);
  append_mask_kernel_instances(families);
  append_random_kernel_instances(families);
  append_optim_kernel_instances(families);
  return families;
}

}  // namespace kiln::native::cuda_kernels

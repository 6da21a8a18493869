// The CUDA C++ templates (KernelSources.h): the prelude and each family's kernel.
#include "eager/kernels/cuda/KernelSources.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "eager/kernels/cuda/IndexKernelSources.h"
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
    for (int k = 0; k < N; ++k) out[k] = data[k];
    for (int d = 0; d < ndim; ++d) {
      const long long size = sizes[d];
      const long long c = linear % size;
      linear /= size;
      for (int k = 0; k < N; ++k) out[k] += c * strides[k][d];
    }
  }
};
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

// A grid-stride loop over `n` elements of strided operands.
const char* kUnary = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n) {
  using IN = $IN;
  using OUT = $OUT;
  using A = kiln::acc_t<IN>;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[2];
    ix.pointers(i, p);
    const A a = kiln::convert<A>(*reinterpret_cast<const IN*>(p[1]));
    *reinterpret_cast<OUT*>(p[0]) = kiln::convert<OUT>($EXPR);
  }
}
)CUDA";

const char* kBinary = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<3> ix, long long n, double scalar_value) {
  using IN = $IN;
  using OUT = $OUT;
  using A = kiln::acc_t<IN>;
  const A $SCALAR = static_cast<A>(scalar_value);
  (void)$SCALAR;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
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
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[4];
    ix.pointers(i, p);
    const bool c = *reinterpret_cast<const bool*>(p[1]);
    *reinterpret_cast<T*>(p[0]) = c ? *reinterpret_cast<const T*>(p[2]) : *reinterpret_cast<const T*>(p[3]);
  }
}
)CUDA";

const char* kCast = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<2> ix, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[2];
    ix.pointers(i, p);
    *reinterpret_cast<$OUT*>(p[0]) = kiln::convert<$OUT>(*reinterpret_cast<const $IN*>(p[1]));
  }
}
)CUDA";

const char* kFill = R"CUDA(
extern "C" __global__ void $NAME(kiln::Indexer<1> ix, long long n, $IN value) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    char* p[1];
    ix.pointers(i, p);
    *reinterpret_cast<$IN*>(p[0]) = value;
  }
}
)CUDA";

// One block (256 threads) per row of a contiguous [rows, cols] input; a tree in shared memory.
const char* kReduce = R"CUDA(
extern "C" __global__ void $NAME(const $IN* in, $OUT* out, long long rows, long long cols) {
  using IN = $IN;
  using OUT = $OUT;
  using A = kiln::acc_t<OUT>;
  __shared__ A buf[256];
  const int t = threadIdx.x;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    A acc = $INIT;
    for (long long c = t; c < cols; c += blockDim.x) {
      const A b = kiln::convert<A>(in[r * cols + c]);
      const A a = acc;
      acc = $COMBINE;
    }
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
  __shared__ A buf[256];
  const int t = threadIdx.x;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    T* dst = out + r * cols;
    A m = kiln::lowest<A>();
    for (long long c = t; c < cols; c += blockDim.x) m = kiln::max_nan(m, kiln::convert<A>(row[c]));
    buf[t] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) buf[t] = kiln::max_nan(buf[t], buf[t + s]);
      __syncthreads();
    }
    m = buf[0];
    __syncthreads();
    A sum = A(0);
    for (long long c = t; c < cols; c += blockDim.x) sum += exp(kiln::convert<A>(row[c]) - m);
    buf[t] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) buf[t] += buf[t + s];
      __syncthreads();
    }
    sum = buf[0];
    __syncthreads();
    for (long long c = t; c < cols; c += blockDim.x) {
      const A x = kiln::convert<A>(row[c]) - m;
      dst[c] = kiln::convert<T>($RESULT);
    }
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
  const std::string scalar = m->scalar_argument.empty() ? "alpha" : m->scalar_argument;
  return {name, fill(kBinary, {{"NAME", name}, {"IN", cuda_type(in)}, {"OUT", cuda_type(out)}, {"EXPR", m->expr},
                               {"SCALAR", scalar}})};
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
  return {name, fill(kSoftmax, {{"NAME", name}, {"IN", cuda_type(dtype)}, {"RESULT", log ? "x - log(sum)" : "exp(x) / sum"}})};
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
  append_random_kernel_instances(families);
  append_optim_kernel_instances(families);
  return families;
}

}  // namespace kiln::native::cuda_kernels

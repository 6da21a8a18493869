// Kernel-IR expressions as CUDA C (CudaExpr.h, Note [CUDA C from the kernel IR]).
#include "codegen/cuda/CudaExpr.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "eager/core/Error.h"

namespace kiln::codegen::cuda {

namespace {

bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
bool is_unsigned(DType d) { return d == DType::UInt8 || d == DType::Bool; }

int bit_width(DType d) {
  switch (d) {
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8: return 8;
    case DType::Int16: return 16;
    case DType::Int32: return 32;
    default: return 64;
  }
}

/// The float16/bfloat16 rounding of a float value (identity otherwise).
std::string round_to(DType d, const std::string& v) {
  if (d == DType::Float16) return "kcg::round_f16(" + v + ")";
  if (d == DType::BFloat16) return "kcg::round_bf16(" + v + ")";
  return v;
}

/// The libdevice function of a unary math op ("expf" / "exp").
std::string math_function(ExprOp op, DType d) {
  const char* base = nullptr;
  switch (op) {
    case ExprOp::Exp: base = "exp"; break;
    case ExprOp::Expm1: base = "expm1"; break;
    case ExprOp::Log: base = "log"; break;
    case ExprOp::Log2: base = "log2"; break;
    case ExprOp::Log10: base = "log10"; break;
    case ExprOp::Log1p: base = "log1p"; break;
    case ExprOp::Sin: base = "sin"; break;
    case ExprOp::Cos: base = "cos"; break;
    case ExprOp::Tan: base = "tan"; break;
    case ExprOp::Tanh: base = "tanh"; break;
    case ExprOp::Erf: base = "erf"; break;
    case ExprOp::Erfc: base = "erfc"; break;
    case ExprOp::Exp2: base = "exp2"; break;
    case ExprOp::Asin: base = "asin"; break;
    case ExprOp::Acos: base = "acos"; break;
    case ExprOp::Atan: base = "atan"; break;
    case ExprOp::Sinh: base = "sinh"; break;
    case ExprOp::Cosh: base = "cosh"; break;
    case ExprOp::Asinh: base = "asinh"; break;
    case ExprOp::Acosh: base = "acosh"; break;
    case ExprOp::Atanh: base = "atanh"; break;
    case ExprOp::Floor: base = "floor"; break;
    case ExprOp::Ceil: base = "ceil"; break;
    case ExprOp::Trunc: base = "trunc"; break;
    case ExprOp::Round: base = "rint"; break;
    case ExprOp::Pow: base = "pow"; break;
    case ExprOp::Atan2: base = "atan2"; break;
    case ExprOp::Hypot: base = "hypot"; break;
    case ExprOp::Fmod: base = "fmod"; break;
    case ExprOp::Copysign: base = "copysign"; break;
    case ExprOp::Abs: base = "fabs"; break;
    default: KILN_FAIL(Runtime, "codegen/cuda: ", expr_op_name(op), " is not a math function");
  }
  return std::string(base) + (d == DType::Float64 ? "" : "f");
}

const char* comparison(ExprOp op) {
  switch (op) {
    case ExprOp::Eq: return "==";
    case ExprOp::Ne: return "!=";
    case ExprOp::Lt: return "<";
    case ExprOp::Le: return "<=";
    case ExprOp::Gt: return ">";
    default: return ">=";
  }
}

}  // namespace

const char* register_type(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::Int8: return "signed char";
    case DType::UInt8: return "unsigned char";
    case DType::Int16: return "short";
    case DType::Int32: return "int";
    case DType::Int64: return "long long";
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    default: KILN_FAIL(NotImplemented, "codegen/cuda: no CUDA kernel type for ", scalar_type_name(d));
  }
}

const char* memory_type(DType d) {
  if (d == DType::Bool) return "unsigned char";
  if (is_half(d)) return "unsigned short";
  return register_type(d);
}

const std::string& cuda_prelude() {
  static const std::string prelude = R"CUDA(
// kiln generated CUDA kernels (codegen/cuda): helpers. Self-contained: NVRTC ships no
// cuda_fp16.h, so the half types are 16-bit words converted here. Guarded: a module
// may hold several generated kernels, each with this prelude.
#ifndef KILN_KCG_PRELUDE
#define KILN_KCG_PRELUDE
namespace kcg {
#ifdef KILN_KCG_HOST  // the host emulation of tests/python/compiler/test_cuda_host_emulation.py
__device__ __forceinline__ float f16_to_float(unsigned short h) { _Float16 x; memcpy(&x, &h, 2); return static_cast<float>(x); }
__device__ __forceinline__ unsigned short float_to_f16(float f) { _Float16 x = static_cast<_Float16>(f); unsigned short h; memcpy(&h, &x, 2); return h; }
#else
__device__ __forceinline__ float f16_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short float_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
__device__ __forceinline__ float bf16_to_float(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((u | 0x400000u) >> 16);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<unsigned short>(u >> 16);
}
__device__ __forceinline__ float round_f16(float f) { return f16_to_float(float_to_f16(f)); }
__device__ __forceinline__ float round_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }
// Floating -> integer as x86's cvtt: out of range or NaN gives the minimum.
__device__ __forceinline__ int to_i32(float v) { return (v >= -2147483648.0f && v < 2147483648.0f) ? static_cast<int>(v) : (-2147483647 - 1); }
__device__ __forceinline__ int to_i32(double v) { return (v >= -2147483648.0 && v < 2147483648.0) ? static_cast<int>(v) : (-2147483647 - 1); }
__device__ __forceinline__ long long to_i64(float v) {
  return (v >= -9223372036854775808.0f && v < 9223372036854775808.0f) ? static_cast<long long>(v) : (-9223372036854775807LL - 1);
}
__device__ __forceinline__ long long to_i64(double v) {
  return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? static_cast<long long>(v) : (-9223372036854775807LL - 1);
}
// Wrapping integer arithmetic (signed overflow is undefined in C++).
template <typename T> __device__ __forceinline__ T wadd(T a, T b) { return static_cast<T>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b)); }
template <typename T> __device__ __forceinline__ T wsub(T a, T b) { return static_cast<T>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b)); }
template <typename T> __device__ __forceinline__ T wmul(T a, T b) { return static_cast<T>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b)); }
template <typename T> __device__ __forceinline__ T wneg(T a) { return static_cast<T>(0ULL - static_cast<unsigned long long>(a)); }
template <typename T> __device__ __forceinline__ T shl(T a, T b, int width) {
  return static_cast<T>(static_cast<unsigned long long>(a) << (static_cast<unsigned long long>(b) & (width - 1)));
}
template <typename T> __device__ __forceinline__ T shr(T a, T b, int width) {
  return static_cast<T>(a >> (static_cast<unsigned long long>(b) & (width - 1)));
}
// NaN-propagating row reductions (as amax/amin): x wins when it is NaN or beyond acc.
template <typename T> __device__ __forceinline__ T max_nan(T acc, T x) { return (x != x || x > acc) ? x : acc; }
template <typename T> __device__ __forceinline__ T min_nan(T acc, T x) { return (x != x || x < acc) ? x : acc; }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
// A block-wide reduction (blockDim.x a multiple of 32, at most 1024): each warp folds its lanes
// with shfl_down into lane 0, lane 0s meet in `shm`, then every warp folds those the same way, so
// every thread gets the same bits. The caller's loop is the same in every thread.
template <typename T, typename F>
__device__ __forceinline__ T block_reduce(T v, T identity, T* shm, F op) {
#ifdef KILN_KCG_HOST
  return v;  // the host emulation runs one thread per block
#endif
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // shm may still be read by the last reduction
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  v = lane < warps ? shm[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  return __shfl_sync(0xffffffffu, v, 0);
}
// V elements of T as one aligned word of up to 16 bytes, so a load or store of it is one
// vector (ld.global.v4.f32 and friends): Note [Vectorised pointwise kernels].
template <typename T, int V> struct alignas(sizeof(T) * V) Vec { T v[V]; };
struct Sum { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return add_rn(a, b); } };
struct MaxNan { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return max_nan(a, b); } };
struct MinNan { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return min_nan(a, b); } };
}  // namespace kcg
#endif  // KILN_KCG_PRELUDE
)CUDA";
  return prelude;
}

std::string load_value(DType d, const std::string& raw) {
  if (d == DType::Float16) return "kcg::f16_to_float(" + raw + ")";
  if (d == DType::BFloat16) return "kcg::bf16_to_float(" + raw + ")";
  if (d == DType::Bool) return "(" + raw + " != 0)";
  return raw;
}

std::string store_value(DType d, const std::string& value) {
  if (d == DType::Float16) return "kcg::float_to_f16(" + value + ")";
  if (d == DType::BFloat16) return "kcg::float_to_bf16(" + value + ")";
  if (d == DType::Bool) return "static_cast<unsigned char>(" + value + ")";
  return value;
}

std::string cast_value(const std::string& v, DType from, DType to) {
  if (from == to) return v;
  const bool ff = is_floating_point(from), tf = is_floating_point(to);
  const std::string rt = register_type(to);
  if (to == DType::Bool) return ff ? "(" + v + " != 0.0)" : "(" + v + " != 0)";
  if (!ff && !tf) return "static_cast<" + rt + ">(" + v + ")";
  if (tf) {  // from an integer, or between floating types (the half types are floats in registers)
    std::string r = std::string(register_type(from)) == rt ? v : "static_cast<" + rt + ">(" + v + ")";
    return round_to(to, r);
  }
  // floating -> integer (Note [CUDA C from the kernel IR])
  if (to == DType::Int64) return "kcg::to_i64(" + v + ")";
  return "static_cast<" + rt + ">(kcg::to_i32(" + v + "))";
}

std::string literal(DType d, double fvalue, int64_t ivalue) {
  char buf[64];
  if (d == DType::Bool) return ivalue != 0 ? "true" : "false";
  if (!is_floating_point(d)) {
    if (d == DType::Int64 && ivalue == INT64_MIN) return "(-9223372036854775807LL - 1)";
    std::snprintf(buf, sizeof buf, "static_cast<%s>(%lldLL)", register_type(d), static_cast<long long>(ivalue));
    return buf;
  }
  if (d == DType::Float64) {
    if (!std::isfinite(fvalue)) {
      uint64_t bits = 0;
      std::memcpy(&bits, &fvalue, sizeof bits);
      std::snprintf(buf, sizeof buf, "__longlong_as_double(0x%016llxLL)", static_cast<unsigned long long>(bits));
      return buf;
    }
    std::snprintf(buf, sizeof buf, "(%a)", fvalue);
    return buf;
  }
  const float f = static_cast<float>(fvalue);
  if (!std::isfinite(f)) {
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    std::snprintf(buf, sizeof buf, "__uint_as_float(0x%08xu)", bits);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "(%af)", static_cast<double>(f));
  return buf;
}

std::string ExprPrinter::statement(int32_t i) const {
  const Expr& e = k.exprs[static_cast<size_t>(i)];
  return std::string("const ") + register_type(e.dtype) + " " + name(i) + " = " + value(i) + ";";
}

std::string ExprPrinter::value(int32_t i) const {
  const Expr& e = k.exprs[static_cast<size_t>(i)];
  const std::string a = e.a >= 0 ? name(e.a) : "", b = e.b >= 0 ? name(e.b) : "", c = e.c >= 0 ? name(e.c) : "";
  const DType ad = e.a >= 0 ? k.exprs[static_cast<size_t>(e.a)].dtype : e.dtype;
  const bool fp = is_floating_point(ad);
  const bool dbl = ad == DType::Float64;
  const std::string rt = register_type(e.dtype);
  switch (e.op) {
    case ExprOp::Load: return load_value(e.dtype, load(e.input));
    case ExprOp::Constant: return literal(e.dtype, e.fvalue, e.ivalue);
    case ExprOp::Cast: return cast_value(a, ad, e.dtype);
    case ExprOp::Neg: return fp ? "(-" + a + ")" : "kcg::wneg(" + a + ")";
    case ExprOp::Abs:
      return fp ? math_function(ExprOp::Abs, ad) + "(" + a + ")" : "(" + a + " < 0 ? kcg::wneg(" + a + ") : " + a + ")";
    case ExprOp::Not: return "(!" + a + ")";
    case ExprOp::Sqrt: return std::string(dbl ? "__dsqrt_rn(" : "__fsqrt_rn(") + a + ")";
    case ExprOp::Floor:
    case ExprOp::Ceil:
    case ExprOp::Trunc:
    case ExprOp::Round: return math_function(e.op, ad) + "(" + a + ")";
    case ExprOp::Fmod:
    case ExprOp::Copysign: return math_function(e.op, ad) + "(" + a + ", " + b + ")";
    case ExprOp::Shl:
      return "kcg::shl<" + rt + ">(" + a + ", " + b + ", " + std::to_string(bit_width(ad)) + ")";
    case ExprOp::Shr:
      return "kcg::shr<" + rt + ">(" + a + ", " + b + ", " + std::to_string(bit_width(ad)) + ")";
    case ExprOp::Add:
      if (fp) return std::string(dbl ? "__dadd_rn(" : "__fadd_rn(") + a + ", " + b + ")";
      return ad == DType::Bool ? "(" + a + " != " + b + ")" : "kcg::wadd<" + rt + ">(" + a + ", " + b + ")";
    case ExprOp::Sub:
      if (fp) return std::string(dbl ? "__dsub_rn(" : "__fsub_rn(") + a + ", " + b + ")";
      return ad == DType::Bool ? "(" + a + " != " + b + ")" : "kcg::wsub<" + rt + ">(" + a + ", " + b + ")";
    case ExprOp::Mul:
      if (fp) return std::string(dbl ? "__dmul_rn(" : "__fmul_rn(") + a + ", " + b + ")";
      return ad == DType::Bool ? "(" + a + " && " + b + ")" : "kcg::wmul<" + rt + ">(" + a + ", " + b + ")";
    case ExprOp::Div: {
      const std::string r = divide_by(e.b);
      if (!r.empty()) return std::string(dbl ? "__dmul_rn(" : "__fmul_rn(") + a + ", " + r + ")";
      return std::string(dbl ? "__ddiv_rn(" : "__fdiv_rn(") + a + ", " + b + ")";
    }
    case ExprOp::Maximum:
    case ExprOp::Minimum: {
      const std::string pick = "(" + a + (e.op == ExprOp::Maximum ? " > " : " < ") + b + " ? " + a + " : " + b + ")";
      return fp ? "(" + a + " != " + a + " ? " + a + " : " + pick + ")" : pick;
    }
    case ExprOp::And: return "static_cast<" + rt + ">(" + a + " & " + b + ")";
    case ExprOp::Or: return "static_cast<" + rt + ">(" + a + " | " + b + ")";
    case ExprOp::Xor: return "static_cast<" + rt + ">(" + a + " ^ " + b + ")";
    case ExprOp::Eq:
    case ExprOp::Ne:
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Gt:
    case ExprOp::Ge: return "(" + a + " " + comparison(e.op) + " " + b + ")";
    case ExprOp::Select: return "(" + a + " ? " + b + " : " + c + ")";
    case ExprOp::Fma: return std::string(dbl ? "__fma_rn(" : "__fmaf_rn(") + a + ", " + b + ", " + c + ")";
    case ExprOp::ReduceSum:
    case ExprOp::ReduceMean:
    case ExprOp::ReduceMax:
    case ExprOp::ReduceMin:
      KILN_FAIL(Runtime, "codegen/cuda: ", expr_op_name(e.op), " e", i, " is printed by its row pass");
    default:  // the vector-math calls: is_vector_math (KernelIR.h) is their one list
      KILN_CHECK(is_vector_math(e.op), "codegen/cuda: no CUDA C for ", expr_op_name(e.op));
      return math_function(e.op, ad) + "(" + a + (e.b >= 0 ? ", " + b : std::string()) + ")";
  }
}

}  // namespace kiln::codegen::cuda

// The table of eager CUDA pointwise ops and the generator hook (PointwiseMath.h).
#include "eager/kernels/cuda/PointwiseMath.h"

#include <atomic>

namespace kiln::native::cuda_kernels {

const std::vector<PointwiseMath>& pointwise_math_table() {
  using K = PointwiseKind;
  using D = DtypeSet;
  static const std::vector<PointwiseMath> table = {
      // unary, computing in a float type
      {"exp", 1, "exp(a)", K::UnaryFloat, D::Floating},
      {"exp2", 1, "exp2(a)", K::UnaryFloat, D::Floating},
      {"expm1", 1, "expm1(a)", K::UnaryFloat, D::Floating},
      {"log", 1, "log(a)", K::UnaryFloat, D::Floating},
      {"log2", 1, "log2(a)", K::UnaryFloat, D::Floating},
      {"log10", 1, "log10(a)", K::UnaryFloat, D::Floating},
      {"log1p", 1, "log1p(a)", K::UnaryFloat, D::Floating},
      {"sqrt", 1, "sqrt(a)", K::UnaryFloat, D::Floating},
      {"rsqrt", 1, "A(1) / sqrt(a)", K::UnaryFloat, D::Floating},
      {"sin", 1, "sin(a)", K::UnaryFloat, D::Floating},
      {"cos", 1, "cos(a)", K::UnaryFloat, D::Floating},
      {"tan", 1, "tan(a)", K::UnaryFloat, D::Floating},
      {"asin", 1, "asin(a)", K::UnaryFloat, D::Floating},
      {"acos", 1, "acos(a)", K::UnaryFloat, D::Floating},
      {"atan", 1, "atan(a)", K::UnaryFloat, D::Floating},
      {"sinh", 1, "sinh(a)", K::UnaryFloat, D::Floating},
      {"cosh", 1, "cosh(a)", K::UnaryFloat, D::Floating},
      {"tanh", 1, "tanh(a)", K::UnaryFloat, D::Floating},
      {"erf", 1, "erf(a)", K::UnaryFloat, D::Floating},
      {"sigmoid", 1, "A(1) / (A(1) + exp(-a))", K::UnaryFloat, D::Floating},
      {"reciprocal", 1, "A(1) / a", K::UnaryFloat, D::Floating},
      // unary, computing in self's dtype
      {"neg", 1, "-a", K::UnarySame, D::NoBool},
      {"abs", 1, "kiln::abs_value(a)", K::UnarySame, D::NoBool},
      {"relu", 1, "(a > A(0) || a != a) ? a : A(0)", K::UnarySame, D::NoBool},
      {"silu", 1, "a / (A(1) + exp(-a))", K::UnarySame, D::Floating},
      {"gelu", 1, "A(0.5) * a * (A(1) + erf(a * A(0.70710678118654752440)))", K::UnarySame, D::Floating},
      {"square", 1, "a * a", K::UnarySame, D::NoBool},
      {"sign", 1, "A((a > A(0)) - (a < A(0)))", K::UnarySame, D::NoBool},
      {"floor", 1, "kiln::floor_value(a)", K::UnarySame, D::NoBool},
      {"ceil", 1, "kiln::ceil_value(a)", K::UnarySame, D::NoBool},
      {"trunc", 1, "kiln::trunc_value(a)", K::UnarySame, D::NoBool},
      {"round", 1, "kiln::round_value(a)", K::UnarySame, D::NoBool},
      {"bitwise_not", 1, "kiln::bit_not(a)", K::UnarySame, D::Integral},
      // binary
      {"add", 2, "a + alpha * b", K::Binary, D::All, true},
      {"sub", 2, "a - alpha * b", K::Binary, D::NoBool, true},
      {"mul", 2, "a * b", K::Binary, D::All},
      {"div", 2, "a / b", K::BinaryFloat, D::Floating},
      {"maximum", 2, "kiln::max_nan(a, b)", K::Binary, D::All},
      {"minimum", 2, "kiln::min_nan(a, b)", K::Binary, D::All},
      {"pow", 2, "pow(a, b)", K::Binary, D::Floating},
      {"atan2", 2, "atan2(a, b)", K::BinaryFloat, D::Floating},
      {"fmod", 2, "fmod(a, b)", K::Binary, D::Floating},
      {"remainder", 2, "kiln::python_remainder(a, b)", K::Binary, D::Floating},
      {"bitwise_and", 2, "a & b", K::Binary, D::Integral},
      {"bitwise_or", 2, "a | b", K::Binary, D::Integral},
      {"bitwise_xor", 2, "a ^ b", K::Binary, D::Integral},
      // activation backwards (grad_output, then the forward's output or input): what training through
      // sigmoid, tanh, silu and gelu needs; the math comes from codegen's table (the template text is
      // the fallback only)
      {"sigmoid_backward", 2, "a * (A(1) - b) * b", K::Binary, D::Floating},
      {"tanh_backward", 2, "a * (A(1) - b * b)", K::Binary, D::Floating},
      {"silu_backward", 2, "a * (A(1) / (A(1) + exp(-b))) * (A(1) + b * (A(1) - A(1) / (A(1) + exp(-b))))", K::Binary,
       D::Floating},
      {"gelu_backward", 2, "a * (A(0.5) * (A(1) + erf(b * A(0.70710678118654752440))) + b * A(0.39894228040143267794) * "
       "exp(A(-0.5) * b * b))", K::Binary, D::Floating},
      // ReLU's backward (relu, relu_ and threshold save what it reads): integers too, as on the CPU
      {"threshold_backward", 2, "b <= threshold ? A(0) : a", K::Binary, D::NoBool, false, "threshold"},
      // comparisons and logic: bool results
      {"eq", 2, "a == b", K::Comparison, D::All},
      {"ne", 2, "a != b", K::Comparison, D::All},
      {"lt", 2, "a < b", K::Comparison, D::All},
      {"le", 2, "a <= b", K::Comparison, D::All},
      {"gt", 2, "a > b", K::Comparison, D::All},
      {"ge", 2, "a >= b", K::Comparison, D::All},
      {"logical_and", 2, "(a != A(0)) && (b != A(0))", K::Comparison, D::All},
      {"logical_or", 2, "(a != A(0)) || (b != A(0))", K::Comparison, D::All},
      {"logical_xor", 2, "(a != A(0)) != (b != A(0))", K::Comparison, D::All},
  };
  return table;
}

const PointwiseMath* find_pointwise_math(const std::string& name) {
  for (const auto& row : pointwise_math_table()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

namespace {
std::atomic<PointwiseKernelGenerator> generator{nullptr};
}  // namespace

void set_pointwise_kernel_generator(PointwiseKernelGenerator g) { generator.store(g); }
PointwiseKernelGenerator pointwise_kernel_generator() { return generator.load(); }

bool dtype_in_set(DType dtype, DtypeSet set) {
  switch (set) {
    case DtypeSet::All:
      return true;
    case DtypeSet::NoBool:
      return dtype != DType::Bool;
    case DtypeSet::Floating:
      return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
             dtype == DType::BFloat16;
    case DtypeSet::Integral:
      return !(dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
               dtype == DType::BFloat16);
  }
  return false;
}

}  // namespace kiln::native::cuda_kernels

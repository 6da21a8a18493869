// The kernel IR (hash-consing, structural hash, printer) and its LLVM lowering:
// contiguous, broadcast, strided and masked-tail kernels on raw buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen/KernelIR.h"
#include "codegen/llvm/KernelJit.h"

using namespace kiln;
using namespace kiln::codegen;

namespace {

/// out0 = in0 * 2 + in1; out1 = in0 > in1 (contiguous: rank 1).
Kernel axpb_kernel(bool contiguous, bool scalar_second, int rank = 1) {
  Kernel k;
  k.rank = rank;
  k.contiguous = contiguous;
  k.input_dtypes = {DType::Float32, DType::Float32};
  k.input_scalar = {false, scalar_second};
  k.output_dtypes = {DType::Float32, DType::Bool};
  KernelBuilder b(k);
  const int32_t x = b.load(0), y = b.load(1);
  k.outputs = {b.binary(ExprOp::Add, b.binary(ExprOp::Mul, x, b.constant(DType::Float32, 2.0)), y),
               b.binary(ExprOp::Gt, x, y)};
  return k;
}

TEST(KernelIR, BuilderReusesEqualExpressions) {
  Kernel k;
  k.input_dtypes = {DType::Float32};
  KernelBuilder b(k);
  const int32_t x = b.load(0);
  EXPECT_EQ(b.unary(ExprOp::Exp, x), b.unary(ExprOp::Exp, b.load(0)));
  EXPECT_EQ(b.cast(x, DType::Float32), x);
  EXPECT_EQ(k.exprs.size(), 2u);
}

TEST(KernelIR, HashIsStructural) {
  EXPECT_EQ(axpb_kernel(true, false).hash(), axpb_kernel(true, false).hash());
  EXPECT_NE(axpb_kernel(true, false).hash(), axpb_kernel(true, true).hash());
  EXPECT_NE(axpb_kernel(true, false).hash(), axpb_kernel(false, false).hash());
  const std::string text = axpb_kernel(true, true).str();
  EXPECT_NE(text.find("in1 : float32 (scalar)"), std::string::npos) << text;
  EXPECT_NE(text.find("= mul e0 e2"), std::string::npos) << text;
  EXPECT_NE(text.find("out1 : bool = e"), std::string::npos) << text;
}

TEST(KernelJit, ContiguousWithTailAndBroadcast) {
  std::vector<Kernel> ks = {axpb_kernel(true, false), axpb_kernel(true, true)};
  const CompiledKernels c = compile_kernels(ks);
  ASSERT_EQ(c.functions.size(), 2u);
  for (int64_t n : {0, 1, 7, 8, 19}) {
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1.0f);
    std::vector<uint8_t> gt(static_cast<size_t>(n), 7);
    for (int64_t i = 0; i < n; ++i) {
      x[static_cast<size_t>(i)] = static_cast<float>(i) - 3.0f;
      y[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
    }
    void* data[4] = {x.data(), y.data(), out.data(), gt.data()};
    const int64_t sizes[1] = {n};
    const int64_t strides[2] = {1, 1};
    c.functions[0](data, sizes, strides, 0, n);
    for (int64_t i = 0; i < n; ++i) {
      const size_t u = static_cast<size_t>(i);
      EXPECT_EQ(out[u], x[u] * 2.0f + y[u]);
      EXPECT_EQ(gt[u], x[u] > y[u] ? 1 : 0);
    }
    const float s = 1.25f;
    void* data_scalar[4] = {x.data(), const_cast<float*>(&s), out.data(), gt.data()};
    c.functions[1](data_scalar, sizes, strides, 0, n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], x[static_cast<size_t>(i)] * 2.0f + s);
  }
}

TEST(KernelJit, StridedRankTwo) {
  // x is a transposed 3x5 view of a 5x3 buffer; y broadcasts a row of 5.
  std::vector<Kernel> ks = {axpb_kernel(false, false, 2)};
  const KernelFn fn = compile_kernels(ks).functions[0];
  std::vector<float> x(15), y(5), out(15);
  std::vector<uint8_t> gt(15);
  for (int i = 0; i < 15; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  for (int i = 0; i < 5; ++i) y[static_cast<size_t>(i)] = static_cast<float>(10 - i);
  void* data[4] = {x.data(), y.data(), out.data(), gt.data()};
  const int64_t sizes[2] = {3, 5};
  const int64_t strides[4] = {1, 3, 0, 1};
  fn(data, sizes, strides, 0, 3);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 5; ++c) {
      const float xv = x[static_cast<size_t>(c * 3 + r)];
      EXPECT_EQ(out[static_cast<size_t>(r * 5 + c)], xv * 2.0f + y[static_cast<size_t>(c)]);
    }
  }
}

TEST(KernelJit, VectorMathAndCasts) {
  Kernel k;
  k.contiguous = true;
  k.input_dtypes = {DType::Float64};
  k.input_scalar = {false};
  k.output_dtypes = {DType::Float64, DType::Int32, DType::Float16};
  KernelBuilder b(k);
  const int32_t x = b.load(0);
  k.outputs = {b.unary(ExprOp::Exp, x), b.cast(x, DType::Int32), b.cast(x, DType::Float16)};
  std::vector<Kernel> ks = {k};
  const KernelFn fn = compile_kernels(ks).functions[0];
  const std::vector<double> x_values = {0.0, -1.5, 2.75, 1e10, NAN, -INFINITY, 0.1, 3.0, 65520.0};
  const int64_t n = static_cast<int64_t>(x_values.size());
  std::vector<double> e(x_values.size());
  std::vector<int32_t> i32(x_values.size());
  std::vector<uint16_t> h(x_values.size());
  void* data[4] = {const_cast<double*>(x_values.data()), e.data(), i32.data(), h.data()};
  const int64_t sizes[1] = {n};
  const int64_t strides[1] = {1};
  fn(data, sizes, strides, 0, n);
  for (size_t i = 0; i < x_values.size(); ++i) {
    const double want = std::exp(x_values[i]);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(e[i]));
    else if (std::isinf(want)) EXPECT_EQ(e[i], want);
    else EXPECT_NEAR(e[i], want, std::abs(want) * 1e-15);
  }
  EXPECT_EQ(i32[1], -1);
  EXPECT_EQ(i32[2], 2);
  EXPECT_EQ(i32[3], INT32_MIN);  // out of range, as x86's cvttsd2si
  EXPECT_EQ(i32[4], INT32_MIN);  // NaN
  EXPECT_EQ(h[2], 0x4180);       // 2.75 in float16
  EXPECT_EQ(h[8], 0x7c00);       // 65520 rounds to inf
}

}  // namespace

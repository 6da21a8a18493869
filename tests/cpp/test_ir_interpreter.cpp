// The reference interpreter: small graphs run through the boxed dispatcher
// give exactly what the direct eager calls give.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "kiln/generated/Functions.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.is_contiguous() ? t : kiln::clone(t, MemoryFormat::Contiguous);
  std::vector<double> out;
  visit_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<double>(c.data_ptr<T>()[i]));
  });
  return out;
}

std::vector<int64_t> dims(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

void expect_same(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(dims(got), dims(want));
  EXPECT_EQ(values(got), values(want));  // same kernels, so bit-identical
}

Tensor counting(std::vector<int64_t> sizes, double scale) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return kiln::mul(kiln::reshape(kiln::arange(0, n, 1, DType::Float32), IntArrayRef(sizes)), Scalar(scale));
}

std::vector<IValue> run(const char* text, std::vector<IValue> inputs) {
  auto g = parse(text);
  verify(*g);
  return interpret(*g, std::move(inputs));
}

std::string error_of(const char* text, std::vector<IValue> inputs) {
  try {
    (void)run(text, std::move(inputs));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(IrInterpreter, AddMulReluMatchEager) {
  const Tensor x = kiln::sub(counting({2, 3}, 0.5), Scalar(1.0), Scalar(1));
  const Tensor y = counting({2, 3}, -0.25);
  const auto out = run(
      "graph(%x : f32[2, 3], %y : f32[2, 3]):\n"
      "  %a : f32[2, 3] = kiln::add.Tensor(%x, %y, alpha=2)\n"
      "  %m : f32[2, 3] = kiln::mul.Tensor(%a, %x)\n"
      "  %r : f32[2, 3] = kiln::relu(%m)\n"
      "  return (%r, %a)\n",
      {x, y});
  ASSERT_EQ(out.size(), 2u);
  const Tensor a = kiln::add(x, y, Scalar(2));
  expect_same(out[0].to_tensor(), kiln::relu(kiln::mul(a, x)));
  expect_same(out[1].to_tensor(), a);
}

TEST(IrInterpreter, MatmulAndSumMatchEager) {
  const Tensor a = counting({3, 4}, 0.1);
  const Tensor b = counting({4, 2}, -0.3);
  const auto out = run(
      "graph(%a : f32[s0, 4], %b : f32[4, 2]):\n"
      "  %p : f32[s0, 2] = kiln::matmul(%a, %b)\n"
      "  %s : f32[] = kiln::sum(%p, dtype=None)\n"
      "  %d : f64[s0] = kiln::sum.dim_IntList(%p, dim=[1], keepdim=False, dtype=float64)\n"
      "  return (%s, %d)\n",
      {a, b});
  const Tensor p = kiln::matmul(a, b);
  expect_same(out[0].to_tensor(), kiln::sum(p));
  const int64_t dim1[] = {1};
  expect_same(out[1].to_tensor(), kiln::sum(p, IntArrayRef(dim1), false, DType::Float64));
}

TEST(IrInterpreter, ConstantsListsAndMultipleOutputs) {
  const Tensor x = counting({2, 3}, 1.5);
  const auto out = run(
      "graph(%x : f32[2, 3], %n : int):\n"
      "  %l : Tensor[] = prim::ListConstruct(%x, %x)\n"
      "  %c : f32[4, 3] = kiln::cat(%l, dim=0)\n"
      "  %three : int = prim::Constant(value=3)\n"
      "  %shape : int[] = prim::ListConstruct(%n, %three)\n"
      "  %r : Tensor = kiln::reshape(%c, %shape)\n"
      "  %parts : Tensor[] = kiln::unbind.int(%r, dim=0)\n"
      "  %p0 : Tensor, %p1 : Tensor, %p2 : Tensor, %p3 : Tensor = prim::ListUnpack(%parts)\n"
      "  %v : Tensor, %i : Tensor = kiln::sort(%p1, dim=-1, descending=True)\n"
      "  return (%p3, %v, %i)\n",
      {x, int64_t{4}});
  const Tensor r = kiln::reshape(kiln::cat(std::vector<Tensor>{x, x}, 0), {4, 3});
  const auto [v, i] = kiln::sort(kiln::select(r, 0, 1), -1, true);
  expect_same(out[0].to_tensor(), kiln::select(r, 0, 3));
  expect_same(out[1].to_tensor(), v);
  expect_same(out[2].to_tensor(), i);
}

TEST(IrInterpreter, ReturnsInputsAndUnusedValuesAreFine) {
  const Tensor x = counting({2}, 1.0);
  const auto out = run(
      "graph(%x : f32[2]):\n"
      "  %unused : f32[2] = kiln::relu(%x)\n"
      "  return (%x, %x)\n",
      {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_tensor().data_ptr<float>(), x.data_ptr<float>());
}

TEST(IrInterpreter, RefusesInputsThatDoNotMatchTheGraph) {
  const char* g =
      "graph(%x : f32[s0, 2], %y : f32[s0, 2]):\n"
      "  %a : f32[s0, 2] = kiln::add.Tensor(%x, %y, alpha=1)\n"
      "  return (%a)\n";
  EXPECT_NE(error_of(g, {counting({3, 2}, 1.0)}).find("the graph takes 2 inputs but got 1"), std::string::npos);
  EXPECT_NE(error_of(g, {counting({3, 2}, 1.0), counting({4, 2}, 1.0)})
                .find("size s0 is 3 elsewhere but input 1 has 4 at dimension 0"),
            std::string::npos);
  EXPECT_NE(error_of(g, {counting({3, 2}, 1.0), kiln::zeros({3, 2}, DType::Int64)}).find("must be float32, got int64"),
            std::string::npos);
  EXPECT_NE(error_of(g, {counting({3, 3}, 1.0), counting({3, 3}, 1.0)}).find("must have size 2 at dimension 1"),
            std::string::npos);
  EXPECT_NE(error_of(g, {int64_t{1}, counting({3, 2}, 1.0)}).find("input 0 must be a tensor"), std::string::npos);
}

TEST(IrInterpreter, OpErrorsPropagateUnchanged) {
  const std::string err = error_of(
      "graph(%a : f32[2, 3], %b : f32[2, 3]):\n"
      "  %p : Tensor = kiln::mm(%a, %b)\n"
      "  return (%p)\n",
      {counting({2, 3}, 1.0), counting({2, 3}, 1.0)});
  EXPECT_NE(err.find("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"), std::string::npos) << err;
}

// Symbolic sizes under capture (capture Note [Symbolic sizes under capture]): a size noted as
// symbolic becomes a graph value, so the graph replays at other sizes; specialize_shapes folds
// it back to a constant for one set of sizes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/CaptureSession.h"
#include "capture/SymbolicInts.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "kiln/generated/Functions.h"

using namespace kiln;
using namespace kiln::capture;

namespace {

size_t count_kind(const ir::Graph& g, const std::string& kind) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->kind_name() == kind ? 1 : 0;
  return n;
}

/// Records x.view(x.size(0) * 2, x.size(1) // 2) with both sizes symbolic, as kiln.compiler does.
std::unique_ptr<ir::Graph> capture_view(const Tensor& x) {
  CaptureSession s;
  s.add_input(x);
  s.set_input_symbols(0, {"s0", "s1"});
  const size_t rows = s.symbolic_size(x, 0);
  const size_t cols = s.symbolic_size(x, 1);
  const size_t doubled = s.symbolic_arith(static_cast<int64_t>(SymbolicOp::Mul), static_cast<int64_t>(rows), false, 2,
                                          true);
  const size_t halved = s.symbolic_arith(static_cast<int64_t>(SymbolicOp::FloorDiv), static_cast<int64_t>(cols), false,
                                         2, true);
  Tensor out;
  {
    CaptureGuard on(s);
    s.note_symbolic_argument(x.size(0) * 2, doubled, 0);
    s.note_symbolic_argument(x.size(1) / 2, halved, 1);
    out = kiln::mul(x.view({x.size(0) * 2, x.size(1) / 2}), Scalar(3));
  }
  s.mark_output(out);
  return s.take_graph();
}

}  // namespace

TEST(CaptureSymbolic, ViewSizesAreGraphValuesThatReplayAtOtherSizes) {
  const Tensor x = kiln::ones({3, 4});
  auto g = capture_view(x);
  ir::verify(*g);
  EXPECT_EQ(count_kind(*g, "capture::sym_size"), 2u);
  EXPECT_EQ(count_kind(*g, "capture::sym_arith"), 2u);
  EXPECT_NE(ir::print(*g).find("f32[s0, s1]"), std::string::npos);
  const Tensor other = kiln::ones({5, 6});
  const std::vector<IValue> out = ir::interpret(*g, {IValue(other)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_tensor().sizes()[0], 10);
  EXPECT_EQ(out[0].to_tensor().sizes()[1], 3);
}

TEST(CaptureSymbolic, SpecializeShapesFoldsSizesAndRetypes) {
  auto g = capture_view(kiln::ones({3, 4}));
  auto s = specialize_shapes(*g, {IValue(kiln::ones({5, 6}))});
  ir::verify(*s);
  EXPECT_EQ(count_kind(*s, "capture::sym_size"), 0u);
  EXPECT_EQ(count_kind(*s, "capture::sym_arith"), 0u);
  const std::string text = ir::print(*s);
  EXPECT_NE(text.find("f32[10, 3]"), std::string::npos) << text;
}

TEST(CaptureSymbolic, PythonIntegerSemantics) {
  const auto op = [](SymbolicOp o) { return static_cast<int64_t>(o); };
  EXPECT_EQ(symbolic_arith(-7, 2, op(SymbolicOp::FloorDiv)), -4);
  EXPECT_EQ(symbolic_arith(-7, 2, op(SymbolicOp::Mod)), 1);
  EXPECT_EQ(symbolic_arith(7, -2, op(SymbolicOp::Mod)), -1);
  EXPECT_EQ(symbolic_arith(3, 5, op(SymbolicOp::Max)), 5);
  EXPECT_THROW((void)symbolic_arith(1, 0, op(SymbolicOp::FloorDiv)), kiln::Error);
}

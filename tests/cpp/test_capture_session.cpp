// Graph capture: a CaptureSession records the ops a block runs into an ir
// graph that verifies, prints, and interprets to the eager result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/CaptureSession.h"
#include "eager/dispatch/Dispatcher.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "kiln/generated/Functions.h"

using namespace kiln;
using namespace kiln::capture;

namespace {

std::vector<double> values(const Tensor& t) {
  const Tensor c = kiln::clone(t, MemoryFormat::Contiguous);
  std::vector<double> out;
  visit_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<double>(c.data_ptr<T>()[i]));
  });
  return out;
}

Tensor counting(std::vector<int64_t> sizes, double scale) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return kiln::mul(kiln::reshape(kiln::arange(0, n, 1, DType::Float32), IntArrayRef(sizes)), Scalar(scale));
}

Tensor f(const Tensor& x, const Tensor& w) {
  Tensor y = kiln::add(kiln::mul(x, x), x, Scalar(2));
  return kiln::sum(kiln::matmul(y, w));
}

size_t count_kind(const ir::Graph& g, const std::string& kind) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->kind_name() == kind ? 1 : 0;
  return n;
}

}  // namespace

TEST(CaptureSession, RecordsAddMulMatmulSumAndInterpretsToEager) {
  const Tensor x = counting({2, 3}, 0.5);
  const Tensor w = counting({3, 4}, 0.25);
  CaptureSession s;
  s.add_input(x);
  s.add_input(w);
  Tensor out;
  {
    CaptureGuard on(s);
    EXPECT_EQ(current_session(), &s);
    out = f(x, w);
  }
  EXPECT_EQ(current_session(), nullptr);
  s.mark_output(out);
  ASSERT_FALSE(s.broken()) << *s.break_reason();
  EXPECT_EQ(s.num_declared_inputs(), 2u);
  EXPECT_EQ(s.input_tensors().size(), 2u);
  ir::verify(s.graph());
  const std::string text = ir::print(s.graph());
  EXPECT_NE(text.find("kiln::mul.Tensor"), std::string::npos) << text;
  EXPECT_NE(text.find("kiln::add.Tensor"), std::string::npos) << text;
  EXPECT_NE(text.find("kiln::sum"), std::string::npos) << text;
  EXPECT_EQ(ir::print(*ir::parse(text)), text);  // the captured graph round-trips

  // Replay on the capture inputs and on fresh ones of the same types.
  auto replay = ir::interpret(s.graph(), {IValue(x), IValue(w)});
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(values(replay[0].to_tensor()), values(out));
  const Tensor x2 = counting({2, 3}, -1.5);
  const Tensor w2 = counting({3, 4}, 3.0);
  replay = ir::interpret(s.graph(), {IValue(x2), IValue(w2)});
  EXPECT_EQ(values(replay[0].to_tensor()), values(f(x2, w2)));
}

TEST(CaptureSession, OnlyWhatReachesTheKeyIsRecordedOnce) {
  // matmul of 2-D tensors is composite: its parts reach Capture, not matmul
  // itself; the parts' own inner calls are not recorded twice.
  const Tensor x = counting({2, 3}, 1.0);
  const Tensor w = counting({3, 4}, 1.0);
  CaptureSession s;
  s.add_input(x);
  s.add_input(w);
  Tensor out;
  {
    CaptureGuard on(s);
    out = kiln::matmul(x, w);
  }
  s.mark_output(out);
  ir::verify(s.graph());
  EXPECT_EQ(count_kind(s.graph(), "kiln::matmul"), 0u) << ir::print(s.graph());
  EXPECT_GE(s.num_ops(), 1u);
  auto replay = ir::interpret(s.graph(), {IValue(x), IValue(w)});
  EXPECT_EQ(values(replay[0].to_tensor()), values(out));
}

TEST(CaptureSession, UnseenTensorsAreLiftedAndInPlaceRebinds) {
  const Tensor x = counting({3}, 1.0);
  const Tensor c = counting({3}, 10.0);  // not declared: lifted by reference
  CaptureSession s;
  s.add_input(x);
  Tensor y;
  {
    CaptureGuard on(s);
    y = kiln::mul(x, Scalar(2.0));
    const OperatorHandle add_ = Dispatcher::singleton().find_schema_or_throw("kiln::add_", "Tensor");
    Stack stack{IValue(y), IValue(c), IValue(Scalar(1))};
    add_.call_boxed(&stack);  // y += c, on an intermediate
  }
  s.mark_output(y);
  ASSERT_FALSE(s.broken()) << *s.break_reason();
  EXPECT_EQ(s.input_tensors().size(), 2u);
  EXPECT_EQ(s.num_declared_inputs(), 1u);
  ir::verify(s.graph());
  // The output is the in-place op's result, not the mul's, recorded out of
  // place (Note [In-place ops under capture]).
  EXPECT_EQ(s.graph().outputs()[0]->node()->kind_name(), "kiln::add.Tensor");
  auto replay = ir::interpret(s.graph(), {IValue(x), IValue(c)});
  EXPECT_EQ(values(replay[0].to_tensor()), values(y));
}

TEST(CaptureSession, InPlaceWriteIntoALiftedTensorBreaks) {
  const Tensor x = counting({3}, 1.0);
  const Tensor c = counting({3}, 10.0);
  CaptureSession s;
  s.add_input(x);
  {
    CaptureGuard on(s);
    const OperatorHandle add_ = Dispatcher::singleton().find_schema_or_throw("kiln::add_", "Tensor");
    Stack stack{IValue(c), IValue(x), IValue(Scalar(1))};
    add_.call_boxed(&stack);
  }
  ASSERT_TRUE(s.broken()) << ir::print(s.graph());
  EXPECT_NE(s.break_reason()->find("captured by reference"), std::string::npos) << *s.break_reason();
  EXPECT_EQ(values(c), (std::vector<double>{0, 11, 22}));  // still ran eagerly
}

TEST(CaptureSession, EscapeMarksTheSessionBrokenAndNothingRecordsOutsideAGuard) {
  CaptureSession s;
  note_escape("Tensor.item()", "here.py:1");  // no current session: nothing happens
  EXPECT_FALSE(s.broken());
  {
    CaptureGuard on(s);
    note_escape("Tensor.item()", "here.py:2");
  }
  ASSERT_TRUE(s.broken());
  EXPECT_NE(s.break_reason()->find("Tensor.item() at here.py:2"), std::string::npos);
  const Tensor x = counting({2}, 1.0);
  (void)kiln::mul(x, x);  // no guard: not recorded
  EXPECT_EQ(s.graph().num_nodes(), 0u);
}

// partition_joint (capture/JointPartition.h): a joint forward+backward graph
// splits into a forward graph returning outputs + saved values and a backward
// graph from the saved values and grad_outputs; running the two equals
// running the joint graph.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/JointPartition.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "kiln/generated/Functions.h"

using namespace kiln;
using namespace kiln::capture;

namespace {

std::vector<float> values(const Tensor& t) {
  const Tensor c = kiln::clone(t, MemoryFormat::Contiguous);
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

size_t count_kind(const ir::Graph& g, const std::string& kind) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->kind_name() == kind ? 1 : 0;
  return n;
}

// y = exp(x) * (x @ w); the backward of x @ w needs the mm's inputs, of the
// product both factors. Inputs: %x, %w (forward), %g (the grad_output).
constexpr const char* kJoint = R"(graph(%x : f32[2, 3], %w : f32[3, 3], %g : f32[2, 3]):
  %e : f32[2, 3] = kiln::exp(%x)
  %m : f32[2, 3] = kiln::mm(%x, %w)
  %y : f32[2, 3] = kiln::mul.Tensor(%e, %m)
  %ge : f32[2, 3] = kiln::mul.Tensor(%g, %m)
  %gm : f32[2, 3] = kiln::mul.Tensor(%g, %e)
  %wt : f32[3, 3] = kiln::t(%w)
  %gx1 : f32[2, 3] = kiln::mm(%gm, %wt)
  %gx2 : f32[2, 3] = kiln::mul.Tensor(%ge, %e)
  %gx : f32[2, 3] = kiln::add.Tensor(%gx1, %gx2, alpha=1)
  %xt : f32[3, 2] = kiln::t(%x)
  %gw : f32[3, 3] = kiln::mm(%xt, %gm)
  return (%y, %gx, %gw)
)";

}  // namespace

TEST(JointPartition, ForwardAndBackwardEqualTheJointGraph) {
  auto joint = ir::parse(kJoint);
  ir::verify(*joint);
  JointPartition p = partition_joint(*joint, 3, 2, 1);
  ir::verify(*p.forward);
  ir::verify(*p.backward);
  // exp(x) is recomputed from the input; only the mm's result is saved.
  EXPECT_EQ(p.num_saved, 1u);
  EXPECT_EQ(p.forward->outputs().size(), 2u);
  EXPECT_EQ(p.backward_inputs, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(count_kind(*p.backward, "kiln::exp"), 1u);
  EXPECT_EQ(count_kind(*p.backward, "kiln::mm"), 2u);
  EXPECT_EQ(count_kind(*p.forward, "kiln::mm"), 1u);

  const Tensor x = kiln::mul(kiln::reshape(kiln::arange(0, 6, 1, DType::Float32), {2, 3}), Scalar(0.1));
  const Tensor w = kiln::reshape(kiln::arange(0, 9, 1, DType::Float32), {3, 3});
  const Tensor g = kiln::ones({2, 3});
  auto want = ir::interpret(*joint, {IValue(x), IValue(w), IValue(g)});
  auto fwd = ir::interpret(*p.forward, {IValue(x), IValue(w)});
  auto bwd = ir::interpret(*p.backward, {IValue(x), IValue(w), IValue(g), fwd[1]});
  EXPECT_EQ(values(fwd[0].to_tensor()), values(want[0].to_tensor()));
  EXPECT_EQ(values(bwd[0].to_tensor()), values(want[1].to_tensor()));
  EXPECT_EQ(values(bwd[1].to_tensor()), values(want[2].to_tensor()));
}

TEST(JointPartition, SplitPointsOutsideTheGraphAreRejected) {
  auto joint = ir::parse(kJoint);
  EXPECT_THROW((void)partition_joint(*joint, 99, 2, 1), std::exception);
  EXPECT_THROW((void)partition_joint(*joint, 3, 5, 1), std::exception);
}

// The minimum cut (Note [Choosing what to save]): the backward reads a chain's
// values and the matmul it starts from; only the matmul's result is saved and
// the chain is recomputed (saving exp's result too would cost 64 more bytes).
TEST(JointPartition, PointwiseChainIsRecomputedFromTheSavedMatmul) {
  auto joint = ir::parse(R"(graph(%x : f32[4, 4], %w : f32[4, 4], %g : f32[4, 4]):
  %m : f32[4, 4] = kiln::mm(%x, %w)
  %a : f32[4, 4] = kiln::sin(%m)
  %b : f32[4, 4] = kiln::mul.Tensor(%a, %m)
  %y : f32[4, 4] = kiln::exp(%b)
  %gb : f32[4, 4] = kiln::mul.Tensor(%g, %y)
  %gm : f32[4, 4] = kiln::mul.Tensor(%gb, %a)
  return (%y, %gm)
)");
  JointPartition p = partition_joint(*joint, 4, 2, 1);
  ir::verify(*p.forward);
  ir::verify(*p.backward);
  EXPECT_EQ(p.num_saved, 1u);
  EXPECT_EQ(p.saved_bytes, 64);
  EXPECT_EQ(p.forward->outputs().back()->name(), "m");
  EXPECT_EQ(count_kind(*p.backward, "kiln::exp"), 1u);
  EXPECT_EQ(count_kind(*p.backward, "kiln::sin"), 1u);
  // Written back into by the run, %x may not be recomputed from: exp(x) is saved instead.
  auto from_input = ir::parse(R"(graph(%x : f32[4, 4], %g : f32[4, 4]):
  %e : f32[4, 4] = kiln::exp(%x)
  %ge : f32[4, 4] = kiln::mul.Tensor(%g, %e)
  return (%e, %ge)
)");
  EXPECT_EQ(partition_joint(*from_input, 1, 1, 1).num_saved, 0u);
  EXPECT_EQ(partition_joint(*from_input, 1, 1, 1, {0}).num_saved, 1u);
}

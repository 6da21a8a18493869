// passes/fuse_reductions on IR text: a decomposed softmax and layer_norm are
// one group each (prologue, reductions, epilogue), row shapes of values, and
// the cases left alone (a read between members, no reduction at all); a
// reduction over the leading dims with its prologue is a column group.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/FusionKernel.h"
#include "ir/Parser.h"
#include "passes/fuse_reductions.h"

using namespace kiln;

namespace {

/// Each group as "op op ... | inputs | outputs | reduced dims".
std::vector<std::string> groups_of(const std::string& text) {
  auto g = ir::parse(text);
  std::vector<std::string> out;
  for (const passes::ReductionGroup& group : passes::fuse_reductions(*g, codegen::has_kernel_math)) {
    std::string s;
    for (const ir::Node* n : group.members.nodes) s += n->op().name().name + " ";
    s += "|";
    for (const ir::Value* v : group.members.inputs) s += " " + v->name();
    s += " |";
    for (const ir::Value* v : group.members.outputs) s += " " + v->name();
    s += " | " + std::to_string(group.reduced_dims);
    out.push_back(s);
  }
  return out;
}

TEST(FuseReductions, DecomposedSoftmaxIsOneGroup) {
  const auto groups = groups_of(R"(graph(%x : f32[4, 8]{8, 1}):
  %m : f32[4, 1]{1, 1} = kiln::amax(%x, dim=[1], keepdim=True)
  %s : f32[4, 8]{8, 1} = kiln::sub.Tensor(%x, %m, alpha=1)
  %e : f32[4, 8]{8, 1} = kiln::exp(%s)
  %t : f32[4, 1]{1, 1} = kiln::sum.dim_IntList(%e, dim=[1], keepdim=True, dtype=None)
  %y : f32[4, 8]{8, 1} = kiln::div.Tensor(%e, %t)
  return (%y)
)");
  EXPECT_EQ(groups, (std::vector<std::string>{"amax sub exp sum div | x | y | 1"}));
}

TEST(FuseReductions, LayerNormWithWeightBiasAndStatistics) {
  const auto groups = groups_of(R"(graph(%x : f32[2, 3, 8]{24, 8, 1}, %w : f32[8]{1}, %b : f32[8]{1}):
  %mean : f32[2, 3, 1]{3, 1, 1} = kiln::mean.dim(%x, dim=[2], keepdim=True, dtype=None)
  %c : f32[2, 3, 8]{24, 8, 1} = kiln::sub.Tensor(%x, %mean, alpha=1)
  %sq : f32[2, 3, 8]{24, 8, 1} = kiln::mul.Tensor(%c, %c)
  %var : f32[2, 3, 1]{3, 1, 1} = kiln::mean.dim(%sq, dim=[2], keepdim=True, dtype=None)
  %ve : f32[2, 3, 1]{3, 1, 1} = kiln::add.Scalar(%var, other=1e-05, alpha=1)
  %rstd : f32[2, 3, 1]{3, 1, 1} = kiln::rsqrt(%ve)
  %n : f32[2, 3, 8]{24, 8, 1} = kiln::mul.Tensor(%c, %rstd)
  %nw : f32[2, 3, 8]{24, 8, 1} = kiln::mul.Tensor(%n, %w)
  %y : f32[2, 3, 8]{24, 8, 1} = kiln::add.Tensor(%nw, %b, alpha=1)
  return (%y, %mean, %rstd)
)");
  EXPECT_EQ(groups, (std::vector<std::string>{"mean sub mul mean add rsqrt mul mul add | x w b | mean rstd y | 1"}));
}

TEST(FuseReductions, RowShapes) {
  auto g = ir::parse(R"(graph(%x : f32[4, 8]{8, 1}, %r : f32[4, 1]{1, 1}, %q : f32[4]{1}, %c : f32[8]{1}, %s : f32[]{}, %t : f32[8, 4]{1, 8}):
  return (%x)
)");
  const std::vector<int64_t> sizes = {4, 8};
  const auto shape = [&](size_t i) { return passes::row_shape_of(g->inputs()[i], sizes, 1); };
  EXPECT_EQ(shape(0), passes::RowShape::Element);
  EXPECT_EQ(shape(1), passes::RowShape::PerRow);
  EXPECT_EQ(shape(2), passes::RowShape::PerRow);
  EXPECT_EQ(shape(3), passes::RowShape::PerColumn);
  EXPECT_EQ(shape(4), passes::RowShape::Scalar);
  EXPECT_EQ(shape(5), std::nullopt);  // neither the space's layout nor a broadcast of part of it
}

TEST(FuseReductions, ReductionOverALeadingDimIsAColumnGroup) {
  // Note [Column reduction groups]: the prologue joins; the weight is PerColumn.
  EXPECT_EQ(groups_of(R"(graph(%x : f32[4, 8]{8, 1}, %w : f32[8]{1}):
  %e : f32[4, 8]{8, 1} = kiln::exp(%x)
  %p : f32[4, 8]{8, 1} = kiln::mul.Tensor(%e, %w)
  %t : f32[1, 8]{8, 1} = kiln::sum.dim_IntList(%p, dim=[0], keepdim=True, dtype=None)
  return (%t, %e)
)"),
            (std::vector<std::string>{"exp mul sum | x w | e t | 1"}));
}

TEST(FuseReductions, ColumnReductionsLeftAlone) {
  // a sum with no prologue; one kept element (eager reduces that as a row); a weight broadcast along a
  // kept dim (not one value per column); a reader of the prologue before the sum.
  for (const char* text : {R"(graph(%x : f32[4, 8]{8, 1}):
  %t : f32[8]{1} = kiln::sum.dim_IntList(%x, dim=[0], keepdim=False, dtype=None)
  return (%t)
)", R"(graph(%x : f32[4, 1]{1, 1}):
  %e : f32[4, 1]{1, 1} = kiln::exp(%x)
  %t : f32[1]{1} = kiln::sum.dim_IntList(%e, dim=[0], keepdim=False, dtype=None)
  return (%t)
)", R"(graph(%x : f32[2, 3, 8]{24, 8, 1}, %w : f32[8]{1}):
  %p : f32[2, 3, 8]{24, 8, 1} = kiln::mul.Tensor(%x, %w)
  %t : f32[3, 8]{8, 1} = kiln::sum.dim_IntList(%p, dim=[0], keepdim=False, dtype=None)
  return (%t)
)", R"(graph(%x : f32[4, 8]{8, 1}):
  %e : f32[4, 8]{8, 1} = kiln::exp(%x)
  %k : f32[4, 8]{8, 1} = kiln::cumsum(%e, dim=1, dtype=None)
  %t : f32[8]{1} = kiln::sum.dim_IntList(%e, dim=[0], keepdim=False, dtype=None)
  return (%t, %k)
)"}) {
    EXPECT_TRUE(groups_of(text).empty()) << text;
  }
}

TEST(FuseReductions, EagerReaderBetweenMembersSplitsTheGroup) {
  // %k reads %e before the sum: a group holding %e and the sum would compute %e too late for it.
  const auto groups = groups_of(R"(graph(%x : f32[4, 8]{8, 1}):
  %e : f32[4, 8]{8, 1} = kiln::exp(%x)
  %k : f32[4, 8]{8, 1} = kiln::cumsum(%e, dim=1, dtype=None)
  %t : f32[4, 1]{1, 1} = kiln::sum.dim_IntList(%k, dim=[1], keepdim=True, dtype=None)
  %y : f32[4, 8]{8, 1} = kiln::div.Tensor(%e, %t)
  return (%y)
)");
  EXPECT_EQ(groups, (std::vector<std::string>{"sum div | k e | y | 1"}));
}

TEST(FuseReductions, PointwiseOnlyGraphsAreLeftToFusePointwise) {
  EXPECT_TRUE(groups_of(R"(graph(%x : f32[4, 8]{8, 1}):
  %e : f32[4, 8]{8, 1} = kiln::exp(%x)
  %y : f32[4, 8]{8, 1} = kiln::neg(%e)
  return (%y)
)").empty());
}

}  // namespace

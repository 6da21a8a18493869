// passes/fuse_pointwise on IR text: which nodes form groups, their inputs and
// outputs, and the cases that must not fuse (a read between members, in-place
// writes, non-dense layouts, ops without kernel math).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/FusionKernel.h"
#include "ir/Parser.h"
#include "passes/fuse_pointwise.h"

using namespace kiln;

namespace {

/// Each group as "op op ... | inputs | outputs" (values by name).
std::vector<std::string> groups_of(const std::string& text) {
  auto g = ir::parse(text);
  std::vector<std::string> out;
  for (const passes::FusionGroup& group : passes::fuse_pointwise(*g, codegen::has_kernel_math)) {
    std::string s;
    for (const ir::Node* n : group.nodes) s += n->op().name().name + " ";
    s += "|";
    for (const ir::Value* v : group.inputs) s += " " + v->name();
    s += " |";
    for (const ir::Value* v : group.outputs) s += " " + v->name();
    out.push_back(s);
  }
  return out;
}

TEST(FusePointwise, VerticalChainThroughBroadcast) {
  const auto groups = groups_of(R"(graph(%x : f32[4, 3]{3, 1}, %y : f32[3]{1}):
  %a : f32[4, 3]{3, 1} = kiln::mul.Scalar(%x, other=2)
  %b : f32[4, 3]{3, 1} = kiln::add.Tensor(%a, %y, alpha=1)
  %c : f32[4, 3]{3, 1} = kiln::exp(%b)
  return (%c, %a)
)");
  EXPECT_EQ(groups, (std::vector<std::string>{"mul add exp | x y | a c"}));
}

TEST(FusePointwise, EagerReaderBetweenMembersSplitsTheGroup) {
  // %s reads %a before %c: a group holding %a and %c would compute %a too late.
  const auto groups = groups_of(R"(graph(%x : f32[4]{1}):
  %a : f32[4]{1} = kiln::exp(%x)
  %s : f32[4]{1} = kiln::cumsum(%a, dim=0, dtype=None)
  %c : f32[4]{1} = kiln::mul.Tensor(%a, %s)
  return (%c)
)");
  EXPECT_EQ(groups, (std::vector<std::string>{"exp | x | a", "mul | a s | c"}));
}

TEST(FusePointwise, NothingFusesInAGraphThatWritesInPlace) {
  EXPECT_TRUE(groups_of(R"(graph(%x : f32[4]{1}):
  %a : f32[4]{1} = kiln::exp(%x)
  %b : f32[4]{1} = kiln::add_.Scalar(%a, other=1, alpha=1)
  %c : f32[4]{1} = kiln::neg(%b)
  return (%c)
)").empty());
}

TEST(FusePointwise, LayoutsAndOpsWithoutMath) {
  // %t is a transposed (dense) layout: its own group; lgamma has no kernel math; a
  // non-dense output (a gap in the strides) never fuses.
  const auto groups = groups_of(R"(graph(%x : f32[3, 2]{1, 3}, %z : f32[2, 2]{4, 1}):
  %t : f32[3, 2]{1, 3} = kiln::neg(%x)
  %g : f32[3, 2]{1, 3} = kiln::lgamma(%t)
  %u : f32[3, 2]{1, 3} = kiln::abs(%g)
  %w : f32[2, 2]{4, 1} = kiln::exp(%z)
  return (%u, %w)
)");
  EXPECT_EQ(groups, (std::vector<std::string>{"neg | x | t", "abs | g | u"}));
}

}  // namespace

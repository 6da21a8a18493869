// The graph passes (passes/) on IR text: each pass's entry function on an
// input graph gives the expected graph, the verifier accepts every result, and
// the pipeline leaves the interpreter's outputs unchanged. The full fixture
// tables are in tests/python/compiler/pass_fixtures.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "kiln/generated/Functions.h"
#include "passes/decompose_composites.h"
#include "passes/effects.h"
#include "passes/eliminate_common_subexpressions.h"
#include "passes/eliminate_dead_code.h"
#include "passes/fold_constants.h"
#include "passes/pipeline.h"
#include "passes/simplify_algebra.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

/// parse, run `pass`, verify, and compare with the canonical form of `expected`.
template <typename Pass>
void expect_rewrite(const char* input, Pass pass, const char* expected) {
  auto g = parse(input);
  verify(*g);
  pass(*g);
  verify(*g);
  EXPECT_EQ(print(*g), print(*parse(expected)));
}

std::vector<double> values(const Tensor& t) {
  const Tensor c = kiln::clone(t.to(DType::Float64), MemoryFormat::Contiguous);
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

TEST(Passes, DeadCodeEliminationDropsUnreadPureNodes) {
  expect_rewrite(
      "graph(%x : f32[2]{1}):\n"
      "  %a : f32[2]{1} = kiln::relu(%x)\n"
      "  %b : f32[2]{1} = kiln::exp(%a)\n"
      "  %m : f32[2]{1} = kiln::bernoulli.p(%x, p=0.5, generator=None)\n"
      "  %w : f32[2]{1} = kiln::mul_.Scalar(%x, other=2)\n"
      "  return (%x)\n",
      passes::eliminate_dead_code,
      "graph(%x : f32[2]{1}):\n"
      "  %m : f32[2]{1} = kiln::bernoulli.p(%x, p=0.5, generator=None)\n"
      "  %w : f32[2]{1} = kiln::mul_.Scalar(%x, other=2)\n"
      "  return (%x)\n");
}

TEST(Passes, CommonSubexpressionsMergeButNotRandomOrReturnedTwice) {
  expect_rewrite(
      "graph(%x : f32[2]{1}):\n"
      "  %a : f32[2]{1} = kiln::exp(%x)\n"
      "  %b : f32[2]{1} = kiln::exp(%x)\n"
      "  %c : f32[2]{1} = kiln::add.Tensor(%a, %b, alpha=1)\n"
      "  %r1 : f32[2]{1} = kiln::bernoulli.p(%x, p=0.5, generator=None)\n"
      "  %r2 : f32[2]{1} = kiln::bernoulli.p(%x, p=0.5, generator=None)\n"
      "  %o1 : f32[2]{1} = kiln::sin(%x)\n"
      "  %o2 : f32[2]{1} = kiln::sin(%x)\n"
      "  return (%c, %r1, %r2, %o1, %o2)\n",
      passes::eliminate_common_subexpressions,
      "graph(%x : f32[2]{1}):\n"
      "  %a : f32[2]{1} = kiln::exp(%x)\n"
      "  %c : f32[2]{1} = kiln::add.Tensor(%a, %a, alpha=1)\n"
      "  %r1 : f32[2]{1} = kiln::bernoulli.p(%x, p=0.5, generator=None)\n"
      "  %r2 : f32[2]{1} = kiln::bernoulli.p(%x, p=0.5, generator=None)\n"
      "  %o1 : f32[2]{1} = kiln::sin(%x)\n"
      "  %o2 : f32[2]{1} = kiln::sin(%x)\n"
      "  return (%c, %r1, %r2, %o1, %o2)\n");
}

TEST(Passes, ConstantsBecomeLiteralArguments) {
  expect_rewrite(
      "graph(%x : f32[6]{1}):\n"
      "  %two : int = prim::Constant(value=2)\n"
      "  %three : int = prim::Constant(value=3)\n"
      "  %shape : int[] = prim::ListConstruct(%two, %three)\n"
      "  %y : f32[2, 3]{3, 1} = kiln::view(%x, %shape)\n"
      "  return (%y)\n",
      [](Graph& g) {
        EXPECT_EQ(passes::fold_constants(g), 2u);  // the list, then view's argument
        passes::eliminate_dead_code(g);
      },
      "graph(%x : f32[6]{1}):\n"
      "  %y : f32[2, 3]{3, 1} = kiln::view(%x, size=[2, 3])\n"
      "  return (%y)\n");
}

TEST(Passes, RewriteRulesFireByName) {
  std::map<std::string, size_t> fired;
  expect_rewrite(
      "graph(%x : f32[2, 3]{3, 1}):\n"
      "  %a : f32[2, 3]{3, 1} = kiln::mul.Scalar(%x, other=1)\n"
      "  %t : f32[3, 2]{1, 3} = kiln::transpose.int(%a, dim0=0, dim1=1)\n"
      "  %u : f32[2, 3]{3, 1} = kiln::transpose.int(%t, dim0=1, dim1=0)\n"
      "  %n : f32[2, 3]{3, 1} = kiln::neg(%u)\n"
      "  %m : f32[2, 3]{3, 1} = kiln::neg(%n)\n"
      "  %r : f32[2, 3]{3, 1} = kiln::exp(%m)\n"
      "  return (%r)\n",
      [&](Graph& g) {
        passes::simplify_algebra(g, &fired);
        passes::eliminate_dead_code(g);
      },
      "graph(%x : f32[2, 3]{3, 1}):\n"
      "  %r : f32[2, 3]{3, 1} = kiln::exp(%x)\n"
      "  return (%r)\n");
  EXPECT_EQ(fired, (std::map<std::string, size_t>{{"double_transpose", 1}, {"mul_by_one", 1}, {"neg_neg", 1}}));
}

TEST(Passes, RewriteRuleTableNamesEachRuleWithItsOperator) {
  const auto rules = passes::rewrite_rules();
  ASSERT_FALSE(rules.empty());
  Graph g;
  for (const auto& r : rules) {
    EXPECT_FALSE(r.name.empty());
    EXPECT_NO_THROW((void)g.create_op(r.op, {})) << r.op << " is not an operator";  // a detached node
  }
  for (std::string_view op : passes::decomposed_ops()) EXPECT_NO_THROW((void)g.create_op(op, {})) << op;
}

TEST(Passes, ForwardingRespectsWritesAndOutputs) {
  // %a is written in place, and a graph output may not become the input.
  const char* text =
      "graph(%x : f32[4]{1}):\n"
      "  %a : f32[4]{1} = kiln::mul.Scalar(%x, other=1)\n"
      "  %w : f32[4]{1} = kiln::add_.Scalar(%a, other=1, alpha=1)\n"
      "  %b : f32[4]{1} = kiln::mul.Scalar(%x, other=1)\n"
      "  return (%w, %b)\n";
  auto g = parse(text);
  passes::AliasClasses aliases(*g);
  EXPECT_TRUE(aliases.is_written(g->find_value("a")));
  EXPECT_TRUE(aliases.may_alias(g->find_value("a"), g->find_value("w")));
  EXPECT_FALSE(aliases.is_written(g->find_value("x")));
  EXPECT_EQ(passes::simplify_algebra(*g), 0u);
  EXPECT_EQ(print(*g), print(*parse(text)));
}

TEST(Passes, SoftmaxDecompositionMatchesEager) {
  const char* text =
      "graph(%x : f32[3, 5]{5, 1}):\n"
      "  %y : f32[3, 5]{5, 1} = kiln::softmax.int(%x, dim=-1, dtype=None)\n"
      "  return (%y)\n";
  auto g = parse(text);
  EXPECT_EQ(passes::decompose_composites(*g), 1u);
  verify(*g);
  for (const Node* n : g->nodes()) EXPECT_NE(n->kind_name(), "kiln::softmax.int");
  const Tensor x = kiln::mul(kiln::reshape(kiln::arange(0, 15, 1, DType::Float32), IntArrayRef({3, 5})), Scalar(0.7));
  const std::vector<double> want = values(interpret(*parse(text), {IValue(x)})[0].to_tensor());
  const std::vector<double> got = values(interpret(*g, {IValue(x)})[0].to_tensor());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Passes, PipelineVerifiesAfterEachPassAndLogs) {
  auto g = parse(
      "graph(%x : f32[4, 8]{8, 1}):\n"
      "  %a : f32[4, 8]{8, 1} = kiln::gelu(%x, approximate=\"tanh\")\n"
      "  %b : f32[4, 8]{8, 1} = kiln::gelu(%x, approximate=\"tanh\")\n"
      "  %dead : f32[4, 8]{8, 1} = kiln::cos(%x)\n"
      "  %r : f32[4, 8]{8, 1} = kiln::add.Tensor(%a, %b, alpha=1)\n"
      "  return (%r)\n");
  std::vector<std::string> logged;
  passes::PipelineOptions options;
  options.verify_after_each = true;
  options.log_after_each = [&](std::string_view pass, size_t, const Graph& graph) {
    logged.emplace_back(pass);
    verify(graph);
  };
  passes::run_pipeline(*g, options);
  const auto names = passes::pipeline_passes();
  EXPECT_EQ(logged, std::vector<std::string>(names.begin(), names.end()));
  size_t tanh_nodes = 0;
  for (const Node* n : g->nodes()) {
    EXPECT_NE(n->kind_name(), "kiln::cos");
    tanh_nodes += n->kind_name() == "kiln::tanh";
  }
  EXPECT_EQ(tanh_nodes, 1u);  // the two decomposed gelus merged
}

TEST(Passes, PipelineRefusesAMalformedInputGraph) {
  auto g = parse("graph(%x : f32[2]{1}):\n  %y : f32[2]{1} = kiln::relu(%x, %x)\n  return (%y)\n");
  passes::PipelineOptions options;
  options.verify_after_each = true;
  try {
    passes::run_pipeline(*g, options);
    FAIL() << "expected a verify error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("passes: the input graph: ir verify: kiln::relu"),
              std::string::npos)
        << e.what();
  }
}

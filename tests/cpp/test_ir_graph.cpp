// The IR's data structures and mutation API: types, attributes, creating and
// placing nodes, replacing uses, erasing, names and cloning.
#include <gtest/gtest.h>

#include <string>

#include "eager/core/Error.h"
#include "ir/Clone.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Type f32(std::vector<SymbolicSize> sizes) {
  TensorType t;
  t.dtype = DType::Float32;
  t.sizes = std::move(sizes);
  return Type::tensor(t);
}

}  // namespace

TEST(IrGraph, TypesPrintTheirTextForm) {
  TensorType t;
  t.dtype = DType::Int64;
  t.sizes = {{SymbolicSize(2), SymbolicSize::symbol("s0")}};
  t.strides = {{SymbolicSize::symbol("s0"), SymbolicSize(1)}};
  t.device = Device(DeviceType::CUDA, 0);
  EXPECT_EQ(Type::tensor(t).str(), "i64[2, s0]{s0, 1}@cuda:0");
  t.dtype.reset();
  t.strides.reset();
  t.device = Device();
  EXPECT_EQ(Type::tensor(t).str(), "?[2, s0]");
  EXPECT_EQ(Type::tensor().str(), "Tensor");
  EXPECT_EQ(Type::list(f32({3})).str(), "Tensor[]");  // lists hold unrefined tensors
  EXPECT_EQ(Type::list(Type::optional(Type::tensor())).str(), "Tensor?[]");
  EXPECT_EQ(Type::optional(Type::list(Type::int_type())).str(), "int[]?");
  EXPECT_EQ(f32({}).str(), "f32[]");
  EXPECT_NE(error_of([] { (void)SymbolicSize(-1); }).find("non-negative"), std::string::npos);
  EXPECT_NE(error_of([] { (void)SymbolicSize::symbol("2x"); }).find("identifier"), std::string::npos);
}

TEST(IrGraph, AttributesPrintAndBoxTheirLiterals) {
  EXPECT_EQ(Attribute::of_float(1.0).str(), "1.0");
  EXPECT_EQ(Attribute::of_float(0.1).str(), "0.1");
  EXPECT_EQ(Attribute::of_float(1e300).str(), "1e+300");
  EXPECT_EQ(Attribute::of_scalar(Scalar(true)).str(), "True");
  EXPECT_EQ(Attribute::of_scalar(Scalar(int64_t{7})).str(), "7");
  EXPECT_EQ(Attribute::of_str("t\"ab\\").str(), "\"t\\\"ab\\\\\"");
  EXPECT_EQ(Attribute::of_float_list({}).kind(), Attribute::Kind::IntList);  // Note [Empty lists are int lists]
  EXPECT_EQ(Attribute::of_dtype(DType::Float16).str(), "float16");
  EXPECT_EQ(Attribute::of_ivalue(IValue(DimVector{1, 2})).str(), "[1, 2]");
  EXPECT_EQ(Attribute::of_int(3).to_ivalue().to_int(), 3);
  EXPECT_NE(error_of([] { (void)Attribute::of_ivalue(IValue(std::vector<Tensor>{})); }).find("no literal form"),
            std::string::npos);
}

TEST(IrGraph, CreatesInsertsAndOrdersNodes) {
  Graph g;
  Value* x = g.add_input(f32({2}), "x");
  Node* relu = g.append(g.create_op("kiln::relu", {x}));
  relu->output()->set_type(f32({2}));
  // Given [relu].  Do insert a constant before relu and an add after it.
  Node* c = g.create_constant(Attribute::of_int(2));
  c->insert_before(relu);
  Node* add = g.create_op("kiln::add.Tensor", {relu->output(), x}, {{"alpha", Attribute::of_int(1)}});
  add->insert_after(relu);
  add->output()->set_type(f32({2}));
  g.add_output(add->output());
  EXPECT_EQ(g.nodes(), (std::vector<Node*>{c, relu, add}));
  EXPECT_TRUE(c->is_before(add));
  EXPECT_FALSE(add->is_before(c));
  verify(g);
  EXPECT_EQ(print(g),
            "graph(%x : f32[2]):\n"
            "  %0 : int = prim::Constant(value=2)\n"
            "  %1 : f32[2] = kiln::relu(%x)\n"
            "  %2 : f32[2] = kiln::add.Tensor(%1, %x, alpha=1)\n"
            "  return (%2)\n");
  // Moving the constant to the end keeps SSA (nothing reads it).
  c->move_after(add);
  EXPECT_EQ(g.last_node(), c);
  verify(g);
  EXPECT_NE(error_of([&] { c->insert_before(relu); }).find("already in the node list"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)g.create_op("kiln::no_such_op", {x}); }).find("Could not find schema"),
            std::string::npos);
}

TEST(IrGraph, ReplacesAllUsesIncludingGraphOutputs) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %a : f32[2] = kiln::relu(%x)\n"
      "  %b : f32[2] = kiln::mul.Tensor(%a, %a)\n"
      "  return (%a, %b)\n");
  Value* a = g->find_value("a");
  Value* x = g->find_value("x");
  ASSERT_EQ(a->uses().size(), 3u);
  // Given %a used twice by mul and once by return.  Do replace with %x.
  a->replace_all_uses_with(x);
  EXPECT_FALSE(a->has_uses());
  EXPECT_EQ(x->uses().size(), 4u);
  verify(*g);
  EXPECT_EQ(print(*g),
            "graph(%x : f32[2]):\n"
            "  %a : f32[2] = kiln::relu(%x)\n"
            "  %b : f32[2] = kiln::mul.Tensor(%x, %x)\n"
            "  return (%x, %b)\n");
}

TEST(IrGraph, EraseRefusesUsedNodesAndFreesNames) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %a : f32[2] = kiln::relu(%x)\n"
      "  %b : f32[2] = kiln::relu(%a)\n"
      "  return (%b)\n");
  Node* a = g->find_value("a")->node();
  EXPECT_EQ(error_of([&] { g->erase(a); }), "ir: cannot erase kiln::relu: its output %a is still used by kiln::relu");
  Node* b = g->find_value("b")->node();
  g->set_output(0, g->find_value("x"));
  g->erase(b);
  g->erase(a);
  EXPECT_EQ(g->num_nodes(), 0u);
  EXPECT_EQ(g->find_value("a"), nullptr);
  EXPECT_TRUE(g->find_value("x")->uses().size() == 1);  // the return only
  verify(*g);
  EXPECT_EQ(print(*g), "graph(%x : f32[2]):\n  return (%x)\n");
}

TEST(IrGraph, EditsInputsOutputsAndAttributes) {
  auto g = parse(
      "graph(%x : f32[2], %y : f32[2]):\n"
      "  %a : f32[2] = kiln::add.Tensor(%x, %y, alpha=1)\n"
      "  return (%a, %x)\n");
  Node* add = g->find_value("a")->node();
  add->set_attribute("alpha", Attribute::of_float(0.5));
  add->replace_input(1, g->find_value("x"));
  g->erase_output(1);
  EXPECT_EQ(g->find_value("y")->uses().size(), 0u);
  verify(*g);
  EXPECT_EQ(print(*g),
            "graph(%x : f32[2], %y : f32[2]):\n"
            "  %a : f32[2] = kiln::add.Tensor(%x, %x, alpha=0.5)\n"
            "  return (%a)\n");
  add->remove_input(0);
  EXPECT_EQ(add->inputs().size(), 1u);
  EXPECT_EQ(g->find_value("x")->uses(), (std::vector<Use>{{add, 0}}));
  EXPECT_NE(error_of([&] { verify(*g); }).find("expects 2 value arguments"), std::string::npos);
}

TEST(IrGraph, NamesAreUniqueIdentifiers) {
  Graph g;
  Value* x = g.add_input(Type::tensor(), "x");
  Value* y = g.add_input(Type::tensor());
  EXPECT_NE(error_of([&] { g.set_name(y, "x"); }).find("the name %x is taken"), std::string::npos);
  EXPECT_NE(error_of([&] { g.set_name(y, "1x"); }).find("must be an identifier"), std::string::npos);
  EXPECT_EQ(g.unique_name("x"), "x_1");
  g.set_name(y, g.unique_name("x"));
  EXPECT_EQ(g.find_value("x_1"), y);
  g.set_name(x, "");
  EXPECT_EQ(g.unique_name("x"), "x");
  EXPECT_NE(x->id(), y->id());
}

TEST(IrGraph, ClonesAGraphIntoAnotherThroughAValueMap) {
  auto body = parse(
      "graph(%p : f32[2], %q : f32[2]):\n"
      "  %s : f32[2] = kiln::mul.Tensor(%p, %q)\n"
      "  %t : f32[2] = kiln::relu(%s)\n"
      "  return (%t)\n");
  auto outer = parse(
      "graph(%x : f32[2]):\n"
      "  %y : f32[2] = kiln::relu(%x)\n"
      "  %z : f32[2] = kiln::add.Tensor(%y, %x, alpha=1)\n"
      "  return (%z)\n");
  // Given outer and body.  Do inline body(%x, %y) before the add, and feed its result to the add.
  Node* add = outer->find_value("z")->node();
  ValueMap map;
  const auto results = clone_graph_into(*body, *outer, {outer->find_value("x"), outer->find_value("y")}, map, add);
  add->replace_input(1, results.at(0));
  verify(*outer);
  EXPECT_EQ(print(*outer),
            "graph(%x : f32[2]):\n"
            "  %y : f32[2] = kiln::relu(%x)\n"
            "  %s : f32[2] = kiln::mul.Tensor(%x, %y)\n"
            "  %t : f32[2] = kiln::relu(%s)\n"
            "  %z : f32[2] = kiln::add.Tensor(%y, %t, alpha=1)\n"
            "  return (%z)\n");
  EXPECT_EQ(map.at(body->find_value("t")), results[0]);
  // A second inlining cannot reuse the names %s and %t, so its values are unnamed.
  ValueMap again;
  const auto second = clone_graph_into(*body, *outer, {outer->find_value("x"), outer->find_value("x")}, again);
  EXPECT_EQ(second[0]->name(), "");
  verify(*outer);
}

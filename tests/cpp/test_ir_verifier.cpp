// The verifier: one test per kind of broken graph, each with its own message.
#include <gtest/gtest.h>

#include <string>

#include "eager/core/Error.h"
#include "eager/dispatch/Library.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

std::string verify_error(const Graph& g) {
  try {
    verify(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::unique_ptr<Graph> two_relus() {
  return parse(
      "graph(%x : f32[2]):\n"
      "  %a : f32[2] = kiln::relu(%x)\n"
      "  %b : f32[2] = kiln::relu(%a)\n"
      "  return (%b)\n");
}

#define EXPECT_VERIFY_ERROR(graph, words) EXPECT_NE(verify_error(graph).find(words), std::string::npos) << verify_error(graph)

}  // namespace

TEST(IrVerifier, AcceptsAWellFormedGraph) { EXPECT_EQ(verify_error(*two_relus()), "(no error)"); }

TEST(IrVerifier, UseBeforeDefinition) {
  auto g = two_relus();
  g->find_value("b")->node()->move_before(g->find_value("a")->node());
  EXPECT_VERIFY_ERROR(*g, "ir verify: kiln::relu: input 0 (%a) is used before its definition");
}

TEST(IrVerifier, InputNotDefinedInTheGraph) {
  auto g = two_relus();
  // A detached node's output is read by a node in the list.
  Node* loose = g->create_op("kiln::relu", {g->find_value("x")});
  g->find_value("b")->node()->replace_input(0, loose->output());
  EXPECT_VERIFY_ERROR(*g, "is not defined by any node of the graph");
}

TEST(IrVerifier, DanglingUseByANodeOutsideTheList) {
  auto g = two_relus();
  (void)g->create_op("kiln::relu", {g->find_value("a")});  // created, never inserted
  EXPECT_VERIFY_ERROR(*g, "value %a has a dangling use by kiln::relu (a node not in the graph)");
}

TEST(IrVerifier, UnknownOperator) {
  auto g = std::make_unique<Graph>();
  {
    Library lib(Library::Kind::Def, "irverifytest", std::nullopt);
    lib.def("gone(Tensor self) -> Tensor");
    Value* x = g->add_input(Type::tensor(), "x");
    g->add_output(g->append(g->create_op("irverifytest::gone", {x}))->output());
    EXPECT_EQ(verify_error(*g), "(no error)");
  }  // the library deregisters the op
  EXPECT_VERIFY_ERROR(*g, "irverifytest::gone: is not a registered operator");
}

TEST(IrVerifier, ArgumentCountDisagreesWithSchema) {
  auto g = two_relus();
  g->find_value("b")->node()->add_input(g->find_value("x"));
  EXPECT_VERIFY_ERROR(*g, "kiln::relu: expects 1 value arguments (self), got 2 for schema relu(Tensor self) -> Tensor");
}

TEST(IrVerifier, UnknownAttributeName) {
  auto g = two_relus();
  g->find_value("b")->node()->set_attribute("inplace", Attribute::of_bool(true));
  EXPECT_VERIFY_ERROR(*g, "kiln::relu: unknown argument 'inplace'");
}

TEST(IrVerifier, ValueOfTheWrongKindForAnArgument) {
  auto g = parse(
      "graph(%x : f32[2], %n : int):\n"
      "  %a : f32[2] = kiln::relu(%n)\n"
      "  return (%a)\n");
  EXPECT_VERIFY_ERROR(*g, "argument 'self' expects Tensor but got %n : int");
}

TEST(IrVerifier, LiteralOfTheWrongKindForAnArgument) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %a : f32[2] = kiln::add.Tensor(%x, %x, alpha=\"one\")\n"
      "  return (%a)\n");
  EXPECT_VERIFY_ERROR(*g, "argument 'alpha' expects Scalar but got the literal \"one\"");
}

TEST(IrVerifier, MissingArgument) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %a : f32[] = kiln::sum(%x)\n"
      "  return (%a)\n");
  EXPECT_VERIFY_ERROR(*g, "kiln::sum: expects 2 value arguments (self, dtype), got 1");
}

TEST(IrVerifier, OutputCountDisagreesWithSchema) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %v : f32[2] = kiln::sort(%x, dim=0, descending=False)\n"
      "  return (%v)\n");
  EXPECT_VERIFY_ERROR(*g, "kiln::sort: has 1 outputs but its schema returns 2 values");
}

TEST(IrVerifier, OutputTypeDisagreesWithSchema) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %v : int = kiln::relu(%x)\n"
      "  return (%v)\n");
  EXPECT_VERIFY_ERROR(*g, "output %v has type int but the schema returns Tensor");
}

TEST(IrVerifier, ConstantWhoseTypeDisagreesWithItsValue) {
  auto g = parse(
      "graph():\n"
      "  %c : float = prim::Constant(value=3)\n"
      "  return (%c)\n");
  EXPECT_VERIFY_ERROR(*g, "prim::Constant: output %c has type float but the constant 3 is a int");
}

TEST(IrVerifier, ConstantWithoutItsValue) {
  auto g = parse(
      "graph():\n"
      "  %c : int = prim::Constant()\n"
      "  return (%c)\n");
  EXPECT_VERIFY_ERROR(*g, "a constant has exactly one attribute, 'value'");
}

TEST(IrVerifier, ListElementOfTheWrongType) {
  auto g = parse(
      "graph(%x : f32[2], %n : int):\n"
      "  %l : Tensor[] = prim::ListConstruct(%x, %n)\n"
      "  return (%l)\n");
  EXPECT_VERIFY_ERROR(*g, "element 1 (%n) has type int, not Tensor");
}

TEST(IrVerifier, ListUnpackOfANonList) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %a : Tensor = prim::ListUnpack(%x)\n"
      "  return (%a)\n");
  EXPECT_VERIFY_ERROR(*g, "a list unpacking takes exactly one input, of a list type");
}

TEST(IrVerifier, StridesThatDisagreeWithTheRank) {
  auto g = parse(
      "graph(%x : f32[2, 3]{1}):\n"
      "  return (%x)\n");
  EXPECT_VERIFY_ERROR(*g, "prim::Param: type f32[2, 3]{1} has 1 strides for 2 dimensions");
}

TEST(IrVerifier, RequiresGradOnAnIntegerTensor) {
  auto g = parse(
      "graph(%x : f32[2]):\n"
      "  %i : i64[2] requires_grad = kiln::relu(%x)\n"
      "  return (%i)\n");
  EXPECT_VERIFY_ERROR(*g, "requires grad but only floating and complex tensors can");
}

TEST(IrVerifier, MutationApiKeepsUseListsConsistent) {
  auto g = two_relus();
  Node* b = g->find_value("b")->node();
  Value* a = g->find_value("a");
  Value* x = g->find_value("x");
  b->replace_input(0, x);
  b->replace_input(0, a);
  EXPECT_EQ(verify_error(*g), "(no error)");  // the API keeps use lists consistent
}
